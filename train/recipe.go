package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/d73a19ff/zoo/internal/memcheck"
	"github.com/d73a19ff/zoo/internal/runinfo"
)

// Record is what run.json records of a run: a flat map from a setting's
// name ("corpus", "tokenizer", "model.n_layer", "learning_rate") to its
// value as compact JSON. A resume compares the record of what it is given
// with the run's, naming each difference.
type Record = runinfo.Record

// Recipe is what one training pipeline supplies to Run: what differs
// between pipelines (its data, tokenizer, model and its own evaluation).
// Run owns the rest: the run directory, run.json, resume, force and
// overwrite, the memory check, the engine, checkpoints, load-best and the
// order of it all. A Recipe is used by one Run at a time.
type Recipe interface {
	// Record returns what run.json records of the run as given now: the
	// data (by size and content hash, not path), the tokenizer settings,
	// the model config and the settings that change what is trained. It
	// is called once the run directory is ready and before Setup; a
	// resume whose record differs from the run's is refused, naming each
	// difference, unless Args.Force.
	Record(ctx context.Context) (Record, error)
	// Setup reads the data and chooses the tokenizer and the model
	// config, and returns the estimated working memory of one training
	// step, which Run checks before Build allocates batches and weights.
	// resume is the checkpoint a resumed run continues ("" for a new
	// run): the model config and tokenizer come from it, whatever the
	// data would give now. It must return promptly with an error wrapping
	// ctx.Err() when ctx is cancelled.
	Setup(ctx context.Context, resume string, out io.Writer) (MemoryNeed, error)
	// Build makes the model (or loads it), the task and the batches.
	Build(ctx context.Context) (Plan, error)
	// Finish runs once training has ended, with the model holding the
	// final weights (with Args.LoadBestModelAtEnd, the best): the
	// recipe's own evaluation, samples and reports, kept in the recipe
	// for its caller. res is the engine's result.
	Finish(ctx context.Context, tr *Trainer, res Result, out io.Writer) error
}

// LegacyRecorder is a Recipe that can check a resume of a run from
// before run.json was written: LegacyRecord returns what can still be
// compared, read from the checkpoint (a model config), and Run compares
// those keys only.
type LegacyRecorder interface {
	LegacyRecord(checkpoint string) (Record, error)
}

// Starter is a Recipe that acts once the engine is ready (built, and
// resumed when resuming) and before the summary and the first step: Start
// gets the trainer, whose Step is the step training starts from (0, or
// the resumed checkpoint's). An image recipe starts its data loader there
// and notes the step its throughput counts from.
type Starter interface {
	Start(tr *Trainer)
}

// Plan is what a Recipe's Build gives Run: the task and data to train,
// and what the engine needs beyond Args.
type Plan struct {
	Task Task
	Data Data
	// Schedule is the learning-rate schedule; nil builds the one
	// Args.LRSchedulerType names, DefaultSchedule when it is empty.
	Schedule        Schedule
	DefaultSchedule string
	// Unit names a batch's target in the progress display ("tok" when
	// empty, "img" for images).
	Unit string
	// Scores, when set, scores the model at every evaluation beyond the
	// loss (see Scoring.Scores); Args.MetricForBestModel names one.
	Scores func(ctx context.Context) (map[string]float64, error)
	// Summary is printed once the engine is ready, before training: the
	// model and the data in one line.
	Summary string
}

// MemoryNeed is a step's estimated working memory (activations), what it
// is of and what to lower when it does not fit (see CheckMemory); a zero
// Bytes checks nothing.
type MemoryNeed struct {
	Bytes       int64
	What, Lower string
}

// CheckMemory refuses a need that would not fit in the machine's
// available memory, naming what and what to lower.
func CheckMemory(need MemoryNeed) error {
	if need.Bytes <= 0 {
		return nil
	}
	return memcheck.CheckMemory(need.Bytes, need.What, need.Lower)
}

// Run is the run skeleton every training pipeline shares: it validates
// args, prints their deprecation lines, readies args.OutputDir (refusing
// one that holds a run unless Resume or OverwriteOutputDir), records the
// run in run.json or, on a resume, checks the record against it, calls
// recipe.Setup, checks the step's memory, calls recipe.Build, builds the
// engine from args and the plan, resumes it from the latest checkpoint,
// calls the recipe's Start (Starter), trains (checkpoints, evaluation,
// load-best), and calls recipe.Finish. Progress goes to out.
//
// An interrupt (ctx) before training ends the run with an error wrapping
// context.Canceled and writes no checkpoint; during training the engine
// writes a checkpoint of the last finished step and Run returns
// ErrInterrupted. Run is safe to call from one goroutine per run
// directory.
func Run(ctx context.Context, args Args, recipe Recipe, out io.Writer) (Result, error) {
	if out == nil {
		out = io.Discard
	}
	if err := args.Validate(); err != nil {
		return Result{}, err
	}
	for _, d := range args.Deprecated {
		fmt.Fprintln(out, d)
	}
	if err := PrepareRun(args.OutputDir, args.Resume, args.OverwriteOutputDir, out); err != nil {
		return Result{}, err
	}
	now, err := recipe.Record(ctx)
	if err != nil {
		return Result{}, err
	}
	resume := ""
	if args.Resume {
		if resume, err = Latest(args.OutputDir); err != nil {
			return Result{}, fmt.Errorf("%w (a run writes step checkpoints every save_steps, and one when interrupted)", err)
		}
		if err := checkRecord(args, recipe, resume, now, out); err != nil {
			return Result{}, err
		}
	}
	need, err := recipe.Setup(ctx, resume, out)
	if err != nil {
		return Result{}, err
	}
	if err := CheckMemory(need); err != nil {
		return Result{}, err
	}
	plan, err := recipe.Build(ctx)
	if err != nil {
		return Result{}, err
	}
	sched := plan.Schedule
	if sched == nil {
		if sched, err = args.Schedule(plan.DefaultSchedule); err != nil {
			return Result{}, err
		}
	}
	if err := ctx.Err(); err != nil { // interrupted while preparing: no step-0 checkpoint
		return Result{}, fmt.Errorf("train: %w", err)
	}
	cfg := args.Engine(sched)
	cfg.Unit, cfg.Scores = plan.Unit, plan.Scores
	tr, err := New(plan.Task, plan.Data, cfg)
	if err != nil {
		return Result{}, err
	}
	defer tr.Close()
	if resume != "" {
		if err := tr.Resume(resume); err != nil {
			return Result{}, err
		}
		fmt.Fprintf(out, "resuming from %s at step %d\n", resume, tr.Step())
	} else if err := runinfo.Write(args.OutputDir, now); err != nil {
		return Result{}, fmt.Errorf("train: %w", err)
	}
	if s, ok := recipe.(Starter); ok {
		s.Start(tr)
	}
	if plan.Summary != "" {
		fmt.Fprintln(out, strings.TrimSuffix(plan.Summary, "\n"))
	}
	res, err := tr.Run(ctx, out)
	if err != nil {
		return res, err
	}
	if err := recipe.Finish(ctx, tr, res, out); err != nil {
		return res, err
	}
	return res, nil
}

// checkRecord compares what a resume is given (now) with the run's
// run.json; for a run from before run.json, with what the recipe can read
// from the checkpoint (LegacyRecorder), or with nothing. A difference is
// refused, naming each, unless args.Force; then it is printed on out.
// Deprecated names in an old run.json are read as their new names.
func checkRecord(args Args, recipe Recipe, checkpoint string, now Record, out io.Writer) error {
	dir := args.OutputDir
	run, err := runinfo.Read(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		lr, ok := recipe.(LegacyRecorder)
		if !ok {
			fmt.Fprintf(out, "resume: %s has no %s: the data and settings cannot be checked against the run's\n", dir, runinfo.File)
			return nil
		}
		fmt.Fprintf(out, "resume: %s has no %s (a run from before it was written): the data and settings cannot be checked against the run's, only what the checkpoint holds\n", dir, runinfo.File)
		if run, err = lr.LegacyRecord(checkpoint); err != nil {
			return err
		}
		kept := Record{}
		for k := range run {
			if v, ok := now[k]; ok {
				kept[k] = v
			}
		}
		now = kept
	case err != nil:
		return fmt.Errorf("train: resume: %w", err)
	default:
		run = upgradeRecord(run, now)
	}
	diff := runinfo.Diff(run, runinfo.Inherited(run, now))
	if len(diff) == 0 {
		return nil
	}
	if !args.Force {
		return fmt.Errorf("train: resume: what is given now differs from the run in %s:\n  %s\nresume with the run's data and settings, or give --force (force: true) to go on with the checkpoint's tokenizer and model config",
			dir, strings.Join(diff, "\n  "))
	}
	fmt.Fprintf(out, "resume: --force: going on with the checkpoint's tokenizer and model config although what is given now differs from the run in %s:\n  %s\n",
		dir, strings.Join(diff, "\n  "))
	return nil
}

// upgradeRecord reads a run.json written before Args: its deprecated
// names become their new ones, and a new name it cannot have recorded
// (an argument the old config did not have) is taken as now's.
func upgradeRecord(run, now Record) Record {
	old := false
	for k := range run {
		if _, ok := DeprecatedNames[k]; ok {
			old = true
		}
	}
	if !old {
		return run
	}
	up := Record{}
	for k, v := range run {
		if n, ok := DeprecatedNames[k]; ok {
			k = n
		}
		up[k] = v
	}
	for _, k := range argNames() {
		if _, ok := up[k]; !ok {
			if v, ok := now[k]; ok {
				up[k] = v
			}
		}
	}
	return up
}

// argNames are Args' JSON names.
func argNames() []string {
	r := Record{}
	if err := r.SetFields("", Args{LRSchedulerType: "x", MinLR: 1, LoggingSteps: 1, LoadBestModelAtEnd: true, MetricForBestModel: "x", GreaterIsBetter: true}); err != nil {
		return nil
	}
	names := make([]string, 0, len(r))
	for k := range r {
		names = append(names, k)
	}
	return names
}

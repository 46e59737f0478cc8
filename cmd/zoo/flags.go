package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/d73a19ff/zoo/finetune"
)

// The CLI's one flag rule: a command reads its --config file first, then
// binds every flag to the resulting config with the config's value as the
// default, so a flag that is set always wins, zero included, and one that is
// not set leaves the file's value. The same flag name means the same thing
// in every command:
//
//	--config FILE        JSON config (the pipeline's key names); flags override it
//	--run DIR            run directory: checkpoints/, metrics.jsonl, loss.png
//	--init-from DIR      start training from this checkpoint (model and tokenizer)
//	--checkpoint DIR     the checkpoint a command reads (eval, generate, translate, inspect)
//	--resume             continue the run directory's latest checkpoint
//	--max-steps N        optimizer steps
//	--batch-size N       examples per micro-batch (per batch when scoring)
//	--learning-rate F    peak learning rate
//	--warmup-steps N     warmup steps of the schedule
//	--eval-interval N    evaluate every N steps
//	--save-interval N    checkpoint every N steps
//	--seed N             seed of initialisation, batches, noise and dropout

// cmdFlags is a command's flag set.
type cmdFlags struct {
	*flag.FlagSet
	usage string
	args  []string // what parse was given, for the --config file's keys
}

func newFlags(name, usage string) *cmdFlags {
	return &cmdFlags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), usage: usage}
}

// preScan returns the value of flag name in args (as -name V, --name V,
// -name=V or --name=V), before the flags are parsed, so that the config
// file can be read first and become the flags' defaults.
func preScan(args []string, name string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		for _, p := range []string{"-" + name, "--" + name} {
			if a == p && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, p+"="); ok {
				return v
			}
		}
	}
	return ""
}

// alias makes old a deprecated spelling of the flag called name: setting it
// sets that flag and prints a deprecation line.
func (f *cmdFlags) alias(old, name string) {
	target := f.Lookup(name)
	f.Func(old, fmt.Sprintf("deprecated: use --%s", name), func(v string) error {
		fmt.Fprintf(stderr, "zoo: --%s is deprecated; use --%s\n", old, name)
		return target.Value.Set(v)
	})
}

// parse parses args, printing the usage and the flags for -h; help reports
// that it did and the command should stop. A bad flag is an errUsage error
// naming it (the caller prints it to stderr with the usage line).
func (f *cmdFlags) parse(args []string, w io.Writer) (help bool, err error) {
	f.args = args
	var msg strings.Builder
	f.SetOutput(&msg)
	f.Usage = func() {}
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.SetOutput(w)
			fmt.Fprintln(w, f.usage+"\n\nFlags:")
			f.PrintDefaults()
			return true, nil
		}
		return false, fmt.Errorf("%w: %v", errUsage, err)
	}
	if f.NArg() > 0 {
		return false, fmt.Errorf("%w: unexpected argument %q", errUsage, f.Arg(0))
	}
	return false, nil
}

// isSet reports whether the flag called name was given.
func (f *cmdFlags) isSet(name string) bool {
	set := false
	f.Visit(func(fl *flag.Flag) {
		if fl.Name == name {
			set = true
		}
	})
	return set
}

// configSets reports whether the --config file gives any of keys at its top
// level. A file that cannot be read gives none (readConfig has read it
// already, so this does not happen).
func (f *cmdFlags) configSets(keys ...string) bool {
	p := preScan(f.args, "config")
	if p == "" {
		return false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return false
	}
	for _, k := range keys {
		if _, ok := top[k]; ok {
			return true
		}
	}
	return false
}

// warmup returns the warmup steps to train with, given the config's warmup
// and steps once the flags are parsed. A warmup that --warmup-steps (or
// --warmup-iters) or the --config file set is kept as it is, by the flag
// rule (one that does not fit the steps is refused by the config's
// validation, naming it). Only the preset's warmup adapts: when --max-steps
// or the file set the steps, it is lowered to a tenth of them, so that a
// short run is not all warmup.
func (f *cmdFlags) warmup(warmup, steps int) int {
	if f.isSet("warmup-steps") || f.isSet("warmup-iters") || f.configSets("warmup_iters", "warmup_steps") {
		return warmup
	}
	if f.isSet("max-steps") || f.isSet("max-iters") || f.configSets("max_iters", "max_steps") {
		return min(warmup, steps/10)
	}
	return warmup
}

// readConfig reads the --config file of args over base with read, or
// returns base when there is none.
func readConfig[T any](args []string, base T, read func(string, T) (T, error)) (T, error) {
	if p := preScan(args, "config"); p != "" {
		return read(p, base)
	}
	return base, nil
}

// trainTargets are the config fields the shared training flags set; a nil
// field is a flag the command does not take.
type trainTargets struct {
	run, initFrom                   *string
	steps, batch, warmup            *int
	evalEvery, saveEvery            *int
	lr                              *float64
	seed                            *uint64
	resume, force, overwrite        *bool
	loadBest                        *bool
	batchWhat, warmupWhat, initWhat string // what the flag's help names
}

// training binds the shared training flags, with one help text each, so a
// flag means the same in every command, and the deprecated spellings
// --max-iters and --warmup-iters.
func (f *cmdFlags) training(t trainTargets) {
	f.String("config", "", "JSON config file (the pipeline's key names); flags override it")
	if t.run != nil {
		f.StringVar(t.run, "run", *t.run, "run directory (checkpoints, metrics.jsonl, loss.png)")
	}
	if t.initFrom != nil {
		f.StringVar(t.initFrom, "init-from", *t.initFrom, "start from this checkpoint: "+t.initWhat)
	}
	if t.steps != nil {
		f.IntVar(t.steps, "max-steps", *t.steps, "optimizer steps")
		f.alias("max-iters", "max-steps")
	}
	if t.batch != nil {
		f.IntVar(t.batch, "batch-size", *t.batch, t.batchWhat+" per micro-batch")
	}
	if t.lr != nil {
		f.Float64Var(t.lr, "learning-rate", *t.lr, "peak learning rate")
	}
	if t.warmup != nil {
		f.IntVar(t.warmup, "warmup-steps", *t.warmup, "warmup steps "+t.warmupWhat)
		f.alias("warmup-iters", "warmup-steps")
	}
	if t.evalEvery != nil {
		f.IntVar(t.evalEvery, "eval-interval", *t.evalEvery, "evaluate every so many steps")
	}
	if t.saveEvery != nil {
		f.IntVar(t.saveEvery, "save-interval", *t.saveEvery, "checkpoint every so many steps")
	}
	if t.seed != nil {
		f.Uint64Var(t.seed, "seed", *t.seed, "seed of initialisation, batches, noise and dropout")
	}
	if t.resume != nil {
		f.BoolVar(t.resume, "resume", *t.resume, "continue from the run directory's latest checkpoint")
	}
	if t.overwrite != nil {
		f.BoolVar(t.overwrite, "overwrite", *t.overwrite, "start over in a run directory that holds a run: the old run is moved to DIR.old-<time>, never deleted")
	}
	if t.loadBest != nil {
		f.BoolVar(t.loadBest, "load-best-model-at-end", *t.loadBest, "when training ends, load checkpoints/best (the best evaluation's) in place of the last step's weights: the final scores are of it")
	}
	if t.force != nil {
		f.BoolVar(t.force, "force", *t.force, "with --resume: go on although the data or config given now differ from the run's (the checkpoint's model and tokenizer are kept)")
	}
}

// taskFlags binds what every fine-tuning task's command shares: the
// training flags, --train-file, --validation-file, --scratch and the
// --checkpoint alias of --init-from. batchWhat names a batch's rows,
// initWhat the checkpoint, fileWhat the data format.
func (f *cmdFlags) taskFlags(t *finetune.Training, ckpt, trainFile, valFile *string, batchWhat, initWhat, fileWhat string) {
	f.training(trainTargets{run: &t.RunDir, initFrom: ckpt, steps: &t.MaxIters, batch: &t.Batch,
		warmup: &t.Warmup, evalEvery: &t.EvalEvery, saveEvery: &t.SaveEvery, lr: &t.LR, seed: &t.Seed,
		resume: &t.Resume, force: &t.Force, overwrite: &t.Overwrite, loadBest: &t.LoadBestModelAtEnd,
		batchWhat: batchWhat, warmupWhat: "before the linear decay", initWhat: initWhat})
	f.StringVar(trainFile, "train-file", *trainFile, fileWhat+" to train on")
	f.StringVar(valFile, "validation-file", *valFile, fileWhat+" to report the scores on (default: val_fraction of the training file)")
	f.BoolVar(&t.Scratch, "scratch", t.Scratch, "train the checkpoint's architecture and tokenizer from fresh weights: the baseline for what pretraining gained")
	f.alias("checkpoint", "init-from")
}

// taskReady checks, once the flags are parsed, what every fine-tuning task
// needs: a checkpoint of family and a training file. The preset's warmup
// adapts to the steps (see warmup); one the user set must fit them (the
// linear decay needs warmup ≤ steps).
func (f *cmdFlags) taskReady(t *finetune.Training, ckpt, trainFile, family, fileWhat string) error {
	if ckpt == "" {
		return fmt.Errorf("%w: --init-from is required: the %s checkpoint to fine-tune (or, with --scratch, whose architecture and tokenizer to use)", errUsage, family)
	}
	if trainFile == "" {
		return fmt.Errorf("%w: --train-file is required (%s)", errUsage, fileWhat)
	}
	t.Warmup = f.warmup(t.Warmup, t.MaxIters)
	if t.Warmup > t.MaxIters {
		return fmt.Errorf("config: warmup_iters %d must be in [0, max_iters %d]: lower --warmup-steps", t.Warmup, t.MaxIters)
	}
	return expectFamily(ckpt, family)
}

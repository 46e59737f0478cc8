package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/runinfo"
)

// toyRecipe is the toy task as a Recipe: it counts its calls and what
// they were given.
type toyRecipe struct {
	t        *testing.T
	seed     uint64
	record   Record
	need     MemoryNeed
	resumed  string
	setups   int
	builds   int
	finished *Result
	task     *toyTask
}

func (r *toyRecipe) Record(context.Context) (Record, error) { return r.record, nil }

func (r *toyRecipe) Setup(_ context.Context, resume string, out io.Writer) (MemoryNeed, error) {
	r.setups++
	r.resumed = resume
	fmt.Fprintln(out, "setup")
	return r.need, nil
}

func (r *toyRecipe) Build(context.Context) (Plan, error) {
	r.builds++
	r.task = newToy(r.t, r.seed, 0.1)
	return Plan{Task: r.task, Data: newToyData(3), DefaultSchedule: "cosine", Summary: "toy: a bigram model"}, nil
}

func (r *toyRecipe) Finish(_ context.Context, _ *Trainer, res Result, _ io.Writer) error {
	r.finished = &res
	return nil
}

// toyArgs are arguments for the toy recipe in dir.
func toyArgs(dir string, steps int) Args {
	return Args{OutputDir: dir, BatchSize: 1, GradientAccumulationSteps: 2, MaxSteps: steps, LearningRate: 3e-2,
		LRSchedulerType: "cosine", MinLR: 3e-3, WarmupSteps: 3, AdamBeta1: 0.9, AdamBeta2: 0.999, AdamEpsilon: 1e-8,
		WeightDecay: 0.01, MaxGradNorm: 1, EvalSteps: 5, SaveSteps: 5, Seed: 7}
}

// Run is the engine with the arguments' settings: a run through the
// skeleton trains the same weights, bit for bit, as the engine given the
// equivalent Config, records run.json, and calls the recipe in order.
func TestRunIsTheEngine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	args := toyArgs(dir, 12)
	args.Deprecated = []string{"config: max_iters is deprecated: use max_steps (Hugging Face's TrainingArguments name)"}
	r := &toyRecipe{t: t, seed: 1, record: Record{"data": `"toy"`}}
	var out strings.Builder
	res, err := Run(context.Background(), args, r, &out)
	require.NoError(t, err)
	require.Equal(t, 12, res.Steps)
	require.Equal(t, 1, r.setups)
	require.Equal(t, 1, r.builds)
	require.Empty(t, r.resumed)
	require.NotNil(t, r.finished)
	require.Equal(t, res.Final, r.finished.Final)
	require.Contains(t, out.String(), "max_iters is deprecated")
	require.Contains(t, out.String(), "toy: a bigram model")
	run, err := runinfo.Read(dir)
	require.NoError(t, err)
	require.Equal(t, Record{"data": `"toy"`}, run)

	sched, err := WarmupCosine(3e-2, 3e-3, 3, 12)
	require.NoError(t, err)
	want := newToy(t, 1, 0.1)
	tr, err := New(want, newToyData(3), Config{Steps: 12, Accumulate: 2, ClipNorm: 1, EvalEvery: 5, SaveEvery: 5,
		Dir: t.TempDir(), Seed: 7, AdamW: AdamWConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}, Schedule: sched})
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Run(context.Background(), nil)
	require.NoError(t, err)
	for i, p := range want.store.Params() {
		require.Equal(t, p.Value.Data(), r.task.store.Params()[i].Value.Data(), p.Name)
	}
}

// A resume continues the latest checkpoint, giving it to Setup, and is
// refused, naming the difference, when the record differs from
// run.json's, unless Force; an old run.json's deprecated names are read
// as the new ones.
func TestRunResumes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	r := &toyRecipe{t: t, seed: 1, record: Record{"data": `"toy"`, "max_steps": "12"}}
	args := toyArgs(dir, 12)
	args.SaveSteps = 1
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(dir, CheckpointsDir, "step-000003")); err == nil {
				cancel()
				return
			}
		}
	}()
	_, err := Run(ctx, args, r, nil)
	require.True(t, errors.Is(err, ErrInterrupted), "%v", err)

	args.Resume = true
	other := &toyRecipe{t: t, seed: 1, record: Record{"data": `"other"`, "max_steps": "12"}}
	_, err = Run(context.Background(), args, other, nil)
	require.ErrorContains(t, err, `data: the run has "toy", now "other"`)
	require.ErrorContains(t, err, "--force")
	require.Zero(t, other.setups, "refused before the data is read")

	// A run.json from before Args, with max_iters for max_steps.
	require.NoError(t, runinfo.Write(dir, Record{"data": `"toy"`, "max_iters": "12"}))
	resumed := &toyRecipe{t: t, seed: 5, record: Record{"data": `"toy"`, "max_steps": "12"}}
	var out strings.Builder
	res, err := Run(context.Background(), args, resumed, &out)
	require.NoError(t, err, out.String())
	require.Equal(t, 12, res.Steps)
	require.Contains(t, resumed.resumed, filepath.Join(CheckpointsDir, "step-"))
	require.Contains(t, out.String(), "resuming from")

	args.Force = true
	forced := &toyRecipe{t: t, seed: 1, record: Record{"data": `"other"`, "max_steps": "12"}}
	out.Reset()
	_, err = Run(context.Background(), args, forced, &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), "--force: going on")
}

// The memory check refuses a step that cannot fit before Build.
func TestRunChecksMemoryBeforeBuild(t *testing.T) {
	r := &toyRecipe{t: t, seed: 1, record: Record{}, need: MemoryNeed{Bytes: 1 << 62, What: "toy: a batch of everything", Lower: "lower the batch"}}
	_, err := Run(context.Background(), toyArgs(filepath.Join(t.TempDir(), "run"), 5), r, nil)
	require.ErrorContains(t, err, "toy: a batch of everything")
	require.ErrorContains(t, err, "lower the batch")
	require.Equal(t, 1, r.setups)
	require.Zero(t, r.builds)
}

// Bad arguments are refused by name before the run directory is made.
func TestArgsValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*Args)
		want string
	}{
		{func(a *Args) { a.OutputDir = "" }, "output_dir is empty"},
		{func(a *Args) { a.MaxSteps = 0 }, "max_steps 0 must be positive"},
		{func(a *Args) { a.BatchSize = -1 }, "per_device_train_batch_size -1"},
		{func(a *Args) { a.GradientAccumulationSteps = -2 }, "gradient_accumulation_steps -2"},
		{func(a *Args) { a.WarmupSteps = 13 }, "warmup_steps 13 must be in [0, max_steps 12]"},
		{func(a *Args) { a.EvalSteps = -1 }, "eval_steps -1"},
		{func(a *Args) { a.MaxGradNorm = -1 }, "max_grad_norm -1"},
		{func(a *Args) { a.LRSchedulerType = "step" }, `lr_scheduler_type "step" is not one of linear, cosine, noam`},
		{func(a *Args) { a.LRSchedulerType = "linear" }, "min_lr 0.003 is the cosine schedule's floor"},
		{func(a *Args) { a.GreaterIsBetter = true }, "greater_is_better needs metric_for_best_model"},
		{func(a *Args) { a.AdamEpsilon = 0 }, "eps 0 must be positive"},
		{func(a *Args) { a.AdamBeta2 = 1 }, "beta2 1 must be in [0, 1)"},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		a := toyArgs(dir, 12)
		c.edit(&a)
		_, err := Run(context.Background(), a, &toyRecipe{t: t, record: Record{}}, nil)
		require.ErrorContains(t, err, c.want)
		_, statErr := os.Stat(dir)
		require.True(t, errors.Is(statErr, os.ErrNotExist), "nothing written for %q", c.want)
	}
	require.NoError(t, toyArgs("run", 12).Validate())
}

// Every deprecated name maps to a name of Args.
func TestDeprecatedNamesAreArgs(t *testing.T) {
	names := map[string]bool{}
	for _, n := range argNames() {
		names[n] = true
	}
	for old, now := range DeprecatedNames {
		require.True(t, names[now], "%s maps to %s, not an Args name", old, now)
		require.False(t, names[old], "%s is an Args name", old)
	}
}

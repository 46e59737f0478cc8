package train

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// startRecipe is a toy Recipe that is a Starter: it notes the step each
// Start saw and whether the summary had been printed by then.
type startRecipe struct {
	t       *testing.T
	out     *bytes.Buffer
	started []int
	early   []bool // the summary was not printed yet when Start ran
}

func (r *startRecipe) Record(context.Context) (Record, error) { return Record{"toy": `"bigram"`}, nil }
func (r *startRecipe) Setup(context.Context, string, io.Writer) (MemoryNeed, error) {
	return MemoryNeed{}, nil
}
func (r *startRecipe) Build(context.Context) (Plan, error) {
	return Plan{Task: newToy(r.t, 1, 0), Data: newToyData(1), DefaultSchedule: "linear", Summary: "toy: a bigram model"}, nil
}
func (r *startRecipe) Start(tr *Trainer) {
	r.started = append(r.started, tr.Step())
	r.early = append(r.early, !bytes.Contains(r.out.Bytes(), []byte("toy: a bigram model")))
}
func (r *startRecipe) Finish(context.Context, *Trainer, Result, io.Writer) error { return nil }

// Run calls a Starter's Start once the engine is ready, before the summary
// and the first step, with the step training starts from: 0 for a new
// run, the checkpoint's on a resume.
func TestRunCallsStarter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	args := Args{OutputDir: dir, BatchSize: 1, MaxSteps: 4, LearningRate: 1e-2, WarmupSteps: 1, SaveSteps: 2,
		AdamBeta1: 0.9, AdamBeta2: 0.999, AdamEpsilon: 1e-8, Seed: 1}
	var out bytes.Buffer
	r := &startRecipe{t: t, out: &out}
	res, err := Run(context.Background(), args, r, &out)
	require.NoError(t, err, out.String())
	require.Equal(t, 4, res.Steps)
	require.Equal(t, []int{0}, r.started)
	require.Equal(t, []bool{true}, r.early)

	for _, d := range []string{"final", "best", "step-000004"} {
		require.NoError(t, os.RemoveAll(filepath.Join(dir, CheckpointsDir, d)))
	}
	args.Resume = true
	out.Reset()
	_, err = Run(context.Background(), args, r, &out)
	require.NoError(t, err, out.String())
	require.Equal(t, []int{0, 2}, r.started)
	require.Equal(t, []bool{true, true}, r.early)
}

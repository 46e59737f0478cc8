package train

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
)

// evalHookTask is the toy task with a hook called as each evaluation batch
// loads.
type evalHookTask struct {
	*toyTask
	onEvalLoad func()
}

func (k *evalHookTask) Loss(g *layers.Graph) (*gorgonia.Node, func(Batch) error, error) {
	loss, load, err := k.toyTask.Loss(g)
	if g.IsTraining() {
		return loss, load, err
	}
	return loss, func(b Batch) error {
		k.onEvalLoad()
		return load(b)
	}, err
}

// Interrupted before its first step, a run writes no checkpoint: it would
// hold nothing but the initial weights, and --resume would continue from
// it as if it were a trained run.
func TestInterruptAtStepZeroWritesNoCheckpoint(t *testing.T) {
	dir := t.TempDir()
	tr, err := New(newToy(t, 1, 0), newToyData(1), toyConfig(dir, 10))
	require.NoError(t, err)
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tr.Run(ctx, nil)
	require.ErrorIs(t, err, ErrInterrupted)
	require.Equal(t, 0, tr.Step())
	entries, err := os.ReadDir(filepath.Join(dir, CheckpointsDir))
	if err == nil {
		require.Empty(t, entries, "no checkpoint of step 0")
	}
	_, err = Latest(dir)
	require.Error(t, err, "nothing to resume")
	recs, err := readMetrics(dir, 1<<30)
	require.NoError(t, err)
	require.Empty(t, recs)
}

// An interrupt during an evaluation stops it before the next batch; the
// run saves the step it trained, which resumes.
func TestInterruptDuringEvaluationStopsBetweenBatches(t *testing.T) {
	dir := t.TempDir()
	cfg := toyConfig(dir, 10)
	cfg.SaveEvery = 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loads := 0
	task := &evalHookTask{toyTask: newToy(t, 1, 0), onEvalLoad: func() {
		loads++
		cancel() // Ctrl-C during the first batch of the evaluation at step 5
	}}
	tr, err := New(task, newToyData(1), cfg)
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Run(ctx, nil)
	require.ErrorIs(t, err, ErrInterrupted)
	require.Equal(t, 1, loads, "the second evaluation batch did not run")
	require.Equal(t, 5, tr.Step())

	root := filepath.Join(dir, CheckpointsDir)
	_, err = os.Stat(filepath.Join(root, "best"))
	require.True(t, os.IsNotExist(err), "an unfinished evaluation saves no best checkpoint")
	latest, err := Latest(dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "step-000005"), latest)
	recs, err := readMetrics(dir, 1<<30)
	require.NoError(t, err)
	require.Len(t, recs, 5, "step 5 is recorded")
	require.Nil(t, recs[4].ValLoss, "without a validation loss")

	tr2, err := New(newToy(t, 2, 0), newToyData(1), cfg)
	require.NoError(t, err)
	defer tr2.Close()
	require.NoError(t, tr2.Resume(latest))
	res, err := tr2.Run(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, 10, res.Steps)
}

// EvaluateContext checks its context before every batch, and its error
// says the evaluation was interrupted; Evaluate still runs them all.
func TestEvaluateContextStopsBetweenBatches(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	var batches []Batch
	for range 50 {
		batches = append(batches, (&toyData{}).batch(r))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loads := 0
	task := &evalHookTask{toyTask: newToy(t, 1, 0), onEvalLoad: func() {
		loads++
		if loads == 3 {
			cancel()
		}
	}}
	_, _, err := EvaluateContext(ctx, task, batches)
	require.ErrorIs(t, err, ErrInterrupted)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.ErrorContains(t, err, "after 3 of 50 batches")
	require.Equal(t, 3, loads)

	loads = 0
	loss, targets, err := Evaluate(task, batches)
	require.NoError(t, err)
	require.Equal(t, 50, loads)
	require.Equal(t, 50*toyB*toyT, targets)
	require.Positive(t, loss)
}

package finetune

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/train"
)

// A fine-tuning run resumed from a step checkpoint ends with the weights
// of the run that never stopped, bit for bit; settings that differ from
// the run's are refused unless forced.
func TestClassifyResumesExactly(t *testing.T) {
	csv, corpus := toySet(t, 120, 1)
	cfg := DefaultClassify()
	cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = tinyCheckpoint(t, corpus), csv, filepath.Join(t.TempDir(), "whole")
	cfg.BatchSize, cfg.MaxSteps, cfg.LearningRate, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps, cfg.ValFraction = 8, 40, 3e-3, 5, 20, 20, 0.2
	whole, err := RunClassify(context.Background(), cfg, io.Discard)
	require.NoError(t, err)

	// The same run, stopped after its step-20 checkpoint: the later
	// checkpoints and records are gone, as after a crash.
	cut := filepath.Join(t.TempDir(), "cut")
	require.NoError(t, os.CopyFS(cut, os.DirFS(cfg.OutputDir)))
	for _, d := range []string{"step-000040", "final", "best"} {
		require.NoError(t, os.RemoveAll(filepath.Join(cut, train.CheckpointsDir, d)))
	}
	cfg.OutputDir, cfg.Resume = cut, true
	var out bytes.Buffer
	resumed, err := RunClassify(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Contains(t, out.String(), "at step 20")
	require.Equal(t, 40, resumed.Steps)
	a, err := os.ReadFile(filepath.Join(whole.Final, layers.WeightsFile))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(resumed.Final, layers.WeightsFile))
	require.NoError(t, err)
	require.True(t, bytes.Equal(a, b), "the resumed run's weights differ")
	require.Equal(t, whole.Confusion, resumed.Confusion)

	// Another learning rate is another run.
	cfg.LearningRate = 1e-3
	_, err = RunClassify(context.Background(), cfg, io.Discard)
	require.ErrorContains(t, err, "learning_rate")
	cfg.Force = true
	out.Reset()
	_, err = RunClassify(context.Background(), cfg, &out)
	require.NoError(t, err)
	require.True(t, strings.Contains(out.String(), "--force"), out.String())
}

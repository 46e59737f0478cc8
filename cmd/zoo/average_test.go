package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/train"
)

// zoo average --run RUN --last N averages the run's newest checkpoints
// into a checkpoint that zoo reads; bad flags are usage errors.
func TestAverageCLI(t *testing.T) {
	runDir := t.TempDir()
	for i, name := range []string{"step-000100", "step-000200", "final"} { // steps 100, 200, 300
		m, err := gpt.New(gpt.Micro(), layers.WithSeed(uint64(i+1)))
		require.NoError(t, err)
		dir := filepath.Join(runDir, train.CheckpointsDir, name)
		require.NoError(t, m.Save(dir))
		require.NoError(t, os.WriteFile(filepath.Join(dir, models.TrainerFile), fmt.Appendf(nil, `{"step": %d}`, 100*(i+1)), 0o644))
	}
	out := filepath.Join(t.TempDir(), "avg")
	var stdout, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"average", "--out", out, "--run", runDir, "--last", "2"}, &stdout, &errb), errb.String())
	require.Contains(t, stdout.String(), "averaged 2 checkpoints into "+out)
	require.Contains(t, stdout.String(), "step-000200")
	require.NotContains(t, stdout.String(), "step-000100")
	stdout.Reset()
	require.Equal(t, 0, run([]string{"inspect", out}, &stdout, &errb), errb.String())
	require.Contains(t, stdout.String(), "family     gpt")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"average", "--run", runDir, "--last", "2"}, "--out DIR is required"},
		{[]string{"average", "--out", out + "2", "--run", runDir}, "--run needs --last N"},
		{[]string{"average", "--out", out + "2", "--last", "2", filepath.Join(runDir, "checkpoints", "final")}, "--last goes with --run"},
		{[]string{"average", "--out", out + "2"}, "no checkpoints"},
		{[]string{"average", "--out", out + "2", "--run", runDir, "--last", "1", "x"}, "not both"},
	} {
		errb.Reset()
		require.Equal(t, 2, run(c.args, &stdout, &errb), c.args)
		require.Contains(t, errb.String(), c.want, c.args)
	}
	errb.Reset()
	require.Equal(t, 1, run([]string{"average", "--out", out, "--run", runDir, "--last", "2"}, &stdout, &errb))
	require.Contains(t, errb.String(), "already exists")
}

package train

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeCheckpoint makes run/checkpoints/name with a trainer.json at step.
func fakeCheckpoint(t *testing.T, run, name string, step int) {
	t.Helper()
	dir := filepath.Join(run, CheckpointsDir, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, TrainerFile), []byte(fmt.Sprintf(`{"step": %d}`, step)), 0o644))
}

// LastCheckpoints orders by the step in trainer.json, skips
// best, keeps final over a step-N at the same step, and says when there
// are too few.
func TestLastCheckpoints(t *testing.T) {
	run := t.TempDir()
	fakeCheckpoint(t, run, "step-000900", 900)
	fakeCheckpoint(t, run, "step-001000", 1000)
	fakeCheckpoint(t, run, "step-010000", 10000)
	fakeCheckpoint(t, run, "step-002000", 2000)
	fakeCheckpoint(t, run, "best", 900)
	fakeCheckpoint(t, run, "final", 10000)
	require.NoError(t, os.MkdirAll(filepath.Join(run, CheckpointsDir, ".step-000500.tmp-123"), 0o755)) // an unfinished write: removed by recovery

	got, err := LastCheckpoints(run, 3)
	require.NoError(t, err)
	ck := filepath.Join(run, CheckpointsDir)
	require.Equal(t, []string{filepath.Join(ck, "step-001000"), filepath.Join(ck, "step-002000"), filepath.Join(ck, "final")}, got)

	got, err = LastCheckpoints(run, 4)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(ck, "step-000900"), got[0])

	_, err = LastCheckpoints(run, 5)
	require.ErrorContains(t, err, "has 4 checkpoints at distinct steps, fewer than the 5 asked for")
	_, err = LastCheckpoints(run, 0)
	require.ErrorContains(t, err, "give at least 1")
	_, err = LastCheckpoints(filepath.Join(run, "nowhere"), 1)
	require.ErrorContains(t, err, "no checkpoints in")

	require.NoError(t, os.WriteFile(filepath.Join(ck, "step-000900", TrainerFile), []byte("{"), 0o644))
	_, err = LastCheckpoints(run, 1)
	require.ErrorContains(t, err, "trainer.json")
}

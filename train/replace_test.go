package train

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/ckptswap"
	"github.com/d73a19ff/zoo/layers"
)

// weightsOf copies a task's parameter values.
func weightsOf(k *toyTask) [][]float32 {
	var out [][]float32
	for _, p := range k.store.Params() {
		out = append(out, slices.Clone(p.Value.Data().([]float32)))
	}
	return out
}

// hiddenEntries lists the entries of a checkpoints directory that are not
// checkpoints: temporary, new or old copies.
func hiddenEntries(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// loadCheckpoint resumes a fresh trainer from ckpt and returns its step and
// weights.
func loadCheckpoint(t *testing.T, dir, ckpt string) (int, [][]float32) {
	t.Helper()
	k := newToy(t, 42, 0) // other initial weights: all must come from the checkpoint
	tr, err := New(k, newToyData(9), toyConfig(dir, 10))
	require.NoError(t, err)
	defer tr.Close()
	require.NoError(t, tr.Resume(ckpt), "the checkpoint loads")
	return tr.Step(), weightsOf(k)
}

// A kill before any file operation of a checkpoint replacement leaves, once
// New or Latest has recovered the run, exactly one complete checkpoint of
// that name: the old one if the new one was not yet complete, else the new
// one; never neither, and no temporary directories.
func TestCheckpointSurvivesAKillAtEveryOperation(t *testing.T) {
	t.Cleanup(func() { ckptswap.SetCrashHook(nil) })
	for _, c := range []struct {
		name     string
		existing bool // an older checkpoint of the name is on disk
	}{{"best", true}, {"final", true}, {"step-000005", false}} {
		want := []string{"create temp", "write model", "write optimizer", "write trainer state", "sync", "mark complete", "move old aside", "move new in", "remove old"}
		if !c.existing {
			want = slices.DeleteFunc(want, func(op string) bool { return op == "move old aside" })
		}
		complete := slices.Index(want, "mark complete") + 1 // kills at ops from here on find the new copy complete
		for _, via := range []string{"New", "Latest"} {
			for k := 0; ; k++ {
				ops := killCheckpointAt(t, c.name, c.existing, via, k, complete)
				if ops == nil {
					continue
				}
				require.Equal(t, want, ops, "%s: the operations the test kills between", c.name)
				require.Equal(t, len(want), k, "%s: a kill before each operation was tried", c.name)
				break
			}
		}
	}
}

// killCheckpointAt writes checkpoint name over an older one (if existing),
// killing the writer before its k-th file operation, recovers via New or
// Latest and checks what is left. It returns the operations of the writer
// when k was past the last one (nothing was killed), nil otherwise.
func killCheckpointAt(t *testing.T, name string, existing bool, via string, k, complete int) []string {
	t.Helper()
	what := fmt.Sprintf("%s via %s, killed before operation %d", name, via, k)
	dir := t.TempDir()
	root := filepath.Join(dir, CheckpointsDir)
	task := newToy(t, 1, 0)
	tr, err := New(task, newToyData(1), toyConfig(dir, 10))
	require.NoError(t, err)
	defer tr.Close()
	_, _, err = tr.trainStep(context.Background())
	require.NoError(t, err)
	if existing {
		_, err = tr.checkpoint(name)
		require.NoError(t, err)
	}
	old := weightsOf(task)
	_, _, err = tr.trainStep(context.Background())
	require.NoError(t, err)
	newer := weightsOf(task)

	var ops []string
	ckptswap.SetCrashHook(func(op string) error {
		ops = append(ops, op)
		if len(ops)-1 < k {
			return nil
		}
		if op == "remove old" && existing { // a kill halfway through removing the old copy
			require.NoError(t, os.Remove(filepath.Join(root, "."+name+ckptswap.AsideSuffix, TrainerFile)))
		}
		return errors.New("killed")
	})
	_, err = tr.checkpoint(name)
	ckptswap.SetCrashHook(nil)
	if len(ops) <= k {
		require.NoError(t, err, what)
		return ops
	}
	require.ErrorIs(t, err, ckptswap.ErrCrashed, what)

	switch via { // the next start of the program
	case "New":
		tr2, err := New(newToy(t, 3, 0), newToyData(1), toyConfig(dir, 10))
		require.NoError(t, err, what)
		tr2.Close()
	case "Latest":
		latest, err := Latest(dir)
		if name == "final" {
			require.NoError(t, err, what)
			require.Equal(t, filepath.Join(root, "final"), latest, what)
		}
	}
	require.Empty(t, hiddenEntries(t, root), "%s: temporary and old copies are cleaned up", what)

	ckpt := filepath.Join(root, name)
	if _, err := os.Stat(ckpt); err != nil {
		require.False(t, existing, "%s: neither the old nor the new checkpoint is left", what)
		require.Less(t, k, complete, "%s: the new checkpoint was complete but is lost", what)
		return nil
	}
	step, weights := loadCheckpoint(t, dir, ckpt)
	if k < complete {
		require.True(t, existing, "%s: an incomplete checkpoint was put in place", what)
		require.Equal(t, 1, step, "%s: the old checkpoint", what)
		require.Equal(t, old, weights, what)
	} else {
		require.Equal(t, 2, step, "%s: the new checkpoint", what)
		require.Equal(t, newer, weights, what)
	}

	tr3, err := New(newToy(t, 1, 0), newToyData(1), toyConfig(dir, 10))
	require.NoError(t, err)
	defer tr3.Close()
	_, err = tr3.checkpoint(name)
	require.NoError(t, err, "%s: the next checkpoint of the name is written", what)
	require.Empty(t, hiddenEntries(t, root), what)
	return nil
}

// Temporary directories of killed writes are removed on the next start, by
// New and by Latest, and the checkpoints beside them are kept.
func TestStaleTempDirsAreCleanedOnStart(t *testing.T) {
	for _, via := range []string{"New", "Latest"} {
		dir := t.TempDir()
		root := filepath.Join(dir, CheckpointsDir)
		tr, err := New(newToy(t, 1, 0), newToyData(1), toyConfig(dir, 10))
		require.NoError(t, err)
		_, _, err = tr.trainStep(context.Background())
		require.NoError(t, err)
		_, err = tr.checkpoint("step-000001")
		require.NoError(t, err)
		_, err = tr.checkpoint("best")
		require.NoError(t, err)
		tr.Close()
		for _, stale := range []string{".best.tmp-123", ".step-000002.tmp-9", ".final.tmp-77"} {
			require.NoError(t, os.MkdirAll(filepath.Join(root, stale), 0o755))
		}
		require.NoError(t, os.WriteFile(filepath.Join(root, ".best.tmp-123", layers.WeightsFile), []byte("half a file"), 0o644))

		switch via {
		case "New":
			tr, err := New(newToy(t, 1, 0), newToyData(1), toyConfig(dir, 10))
			require.NoError(t, err)
			tr.Close()
		case "Latest":
			latest, err := Latest(dir)
			require.NoError(t, err)
			require.Equal(t, filepath.Join(root, "step-000001"), latest)
		}
		require.Empty(t, hiddenEntries(t, root), via)
		for _, name := range []string{"best", "step-000001"} {
			step, _ := loadCheckpoint(t, dir, filepath.Join(root, name))
			require.Equal(t, 1, step, via)
		}
		// Nothing is left to recover, so nothing is written: a run on
		// read-only storage can still be read.
		require.NoError(t, os.Chmod(root, 0o555))
		latest, err := Latest(dir)
		require.NoError(t, os.Chmod(root, 0o755))
		require.NoError(t, err, via)
		require.Equal(t, filepath.Join(root, "step-000001"), latest)
	}
}

// Older versions of zoo moved a checkpoint aside to .<name>.tmp-<n>.old
// before renaming the new one in; a kill between the two renames left no
// <name>. Recovery puts the old copy back, and likewise a .<name>.old left
// alone.
func TestRecoverAnOldCopyLeftAlone(t *testing.T) {
	for _, aside := range []string{".final.tmp-123.old", ".final.old"} {
		dir := t.TempDir()
		root := filepath.Join(dir, CheckpointsDir)
		tr, err := New(newToy(t, 1, 0), newToyData(1), toyConfig(dir, 10))
		require.NoError(t, err)
		_, _, err = tr.trainStep(context.Background())
		require.NoError(t, err)
		_, err = tr.checkpoint("final")
		require.NoError(t, err)
		tr.Close()
		require.NoError(t, os.Rename(filepath.Join(root, "final"), filepath.Join(root, aside)))
		require.NoError(t, os.MkdirAll(filepath.Join(root, ".final.tmp-123"), 0o755))

		latest, err := Latest(dir)
		require.NoError(t, err, aside)
		require.Equal(t, filepath.Join(root, "final"), latest, aside)
		require.Empty(t, hiddenEntries(t, root), aside)
		step, _ := loadCheckpoint(t, dir, latest)
		require.Equal(t, 1, step, aside)
	}
}

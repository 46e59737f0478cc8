package train

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// trainedRun makes a run of 10 steps in dir: checkpoints best, final and
// step-000005 and 10 records in metrics.jsonl.
func trainedRun(t *testing.T, dir string) {
	t.Helper()
	tr, err := New(newToy(t, 1, 0), newToyData(1), toyConfig(dir, 10))
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Run(context.Background(), nil)
	require.NoError(t, err)
}

// tree maps every file and directory under dir to its content ("dir" for
// directories), to check that nothing was changed or deleted.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	}))
	return out
}

// A new run goes ahead in a missing, empty or unrelated directory, and in
// one a run interrupted at step 0 left (an empty metrics.jsonl); a
// directory holding a run is refused, saying what is there and what to do,
// and left as it was.
func TestPrepareRunDirNewRefusesARun(t *testing.T) {
	base := t.TempDir()
	for name, setup := range map[string]func(dir string){
		"missing": func(string) {},
		"empty":   func(dir string) { require.NoError(t, os.Mkdir(dir, 0o755)) },
		"unrelated": func(dir string) {
			require.NoError(t, os.Mkdir(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hi"), 0o644))
		},
		"interrupted at step 0": func(dir string) {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, CheckpointsDir), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, MetricsFile), nil, 0o644))
		},
	} {
		dir := filepath.Join(base, strings.ReplaceAll(name, " ", "-"))
		setup(dir)
		moved, err := PrepareRunDir(dir, RunNew)
		require.NoError(t, err, name)
		require.Empty(t, moved, name)
		fi, err := os.Stat(dir)
		require.NoError(t, err, name)
		require.True(t, fi.IsDir(), name)
	}

	for name, c := range map[string]struct {
		setup func(dir string)
		held  string
	}{
		"trained": {func(dir string) { trainedRun(t, dir) }, "(checkpoints best, final and step-000005; metrics.jsonl with 10 records)"},
		"metrics only": {func(dir string) {
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, MetricsFile), []byte("{\"step\":1}\n{\"step\":2}\n"), 0o644))
		}, "(metrics.jsonl with 2 records)"},
		"checkpoint only": {func(dir string) {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, CheckpointsDir, "step-000003"), 0o755))
		}, "(checkpoint step-000003)"},
	} {
		dir := filepath.Join(base, strings.ReplaceAll(name, " ", "-"))
		c.setup(dir)
		before := tree(t, dir)
		_, err := PrepareRunDir(dir, RunNew)
		require.ErrorContains(t, err, "run directory "+dir+" already holds a run "+c.held, name)
		for _, how := range []string{"--resume", "--overwrite", "--run", dir + ".old-<time>"} {
			require.ErrorContains(t, err, how, name)
		}
		require.Equal(t, before, tree(t, dir), "%s: nothing changed", name)
	}
}

// Resuming needs a checkpoint, and recovers the checkpoints from a kill.
func TestPrepareRunDirResumeNeedsACheckpoint(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "run")
	trainedRun(t, dir)
	before := tree(t, dir)
	moved, err := PrepareRunDir(dir, RunResume)
	require.NoError(t, err)
	require.Empty(t, moved)
	require.Equal(t, before, tree(t, dir), "a run is resumed as it is")

	// Killed while replacing final: the complete new copy is rolled forward.
	root := filepath.Join(dir, CheckpointsDir)
	require.NoError(t, os.Rename(filepath.Join(root, "final"), filepath.Join(root, ".final.new")))
	require.NoError(t, os.Rename(filepath.Join(root, "best"), filepath.Join(root, ".final.old"))) // best stands in for the old final
	_, err = PrepareRunDir(dir, RunResume)
	require.NoError(t, err)
	require.Empty(t, hiddenEntries(t, root))
	latest, err := Latest(dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "final"), latest)

	_, err = PrepareRunDir(filepath.Join(base, "missing"), RunResume)
	require.ErrorContains(t, err, "there is no run directory")
	_, err = os.Stat(filepath.Join(base, "missing"))
	require.True(t, os.IsNotExist(err), "resuming makes no directory")

	metricsOnly := filepath.Join(base, "metrics-only")
	require.NoError(t, os.MkdirAll(metricsOnly, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(metricsOnly, MetricsFile), []byte("{\"step\":1}\n"), 0o644))
	_, err = PrepareRunDir(metricsOnly, RunResume)
	require.ErrorContains(t, err, "has no checkpoint to resume from (it holds metrics.jsonl with 1 record)")
	require.ErrorContains(t, err, "--overwrite")

	_, err = PrepareRunDir(base, RunResume) // holds other runs, not one
	require.ErrorContains(t, err, "has no checkpoint to resume from (it holds nothing); to start a new run there, drop --resume")
}

// Overwriting moves the old run, whole, to <dir>.old-<time> and starts in
// an empty directory; nothing is deleted, also when overwriting twice in
// the same second.
func TestPrepareRunDirOverwriteMovesTheRunAside(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "run")
	trainedRun(t, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep me"), 0o644))
	first := tree(t, dir)

	moved, err := PrepareRunDir(dir, RunOverwrite)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(moved, dir+".old-"), moved)
	require.Equal(t, first, tree(t, moved), "the old run is moved, whole")
	require.Equal(t, map[string]string{".": "dir"}, tree(t, dir), "the run directory starts empty")
	_, err = PrepareRunDir(dir, RunNew)
	require.NoError(t, err, "a new run can start")

	trainedRun(t, dir)
	second := tree(t, dir)
	moved2, err := PrepareRunDir(dir, RunOverwrite)
	require.NoError(t, err)
	require.NotEqual(t, moved, moved2)
	require.Equal(t, first, tree(t, moved), "the first old run is kept")
	require.Equal(t, second, tree(t, moved2))

	// A directory without a run is not moved.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644))
	moved3, err := PrepareRunDir(dir, RunOverwrite)
	require.NoError(t, err)
	require.Empty(t, moved3)
	require.Equal(t, map[string]string{".": "dir", "notes.txt": "mine"}, tree(t, dir))
	entries, err := os.ReadDir(base)
	require.NoError(t, err)
	require.Len(t, entries, 3, "run and its two old runs")

	fresh := filepath.Join(base, "fresh")
	moved4, err := PrepareRunDir(fresh, RunOverwrite)
	require.NoError(t, err)
	require.Empty(t, moved4)
	_, err = os.Stat(fresh)
	require.NoError(t, err, "made")
}

// The working directory cannot be moved aside from under the process: that
// is an error, and the run stays.
func TestPrepareRunDirOverwriteRefusesTheWorkingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	trainedRun(t, dir)
	before := tree(t, dir)
	t.Chdir(dir)
	_, err := PrepareRunDir(".", RunOverwrite)
	require.ErrorContains(t, err, "is the working directory or contains it")
	require.Equal(t, before, tree(t, dir))
}

func TestRunModeOf(t *testing.T) {
	for _, c := range []struct {
		resume, overwrite bool
		want              RunMode
	}{{false, false, RunNew}, {true, false, RunResume}, {false, true, RunOverwrite}} {
		m, err := RunModeOf(c.resume, c.overwrite)
		require.NoError(t, err)
		require.Equal(t, c.want, m)
	}
	_, err := RunModeOf(true, true)
	require.ErrorContains(t, err, "give one of them")
	require.Equal(t, "overwrite", RunOverwrite.String())
	_, err = PrepareRunDir(t.TempDir(), RunMode(7))
	require.ErrorContains(t, err, "unknown mode RunMode(7)")
}

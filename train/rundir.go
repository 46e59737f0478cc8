package train

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

// RunMode is what starting a run does with a run directory that already
// holds one.
type RunMode int

const (
	// RunNew starts a new run, and refuses a directory that holds one.
	RunNew RunMode = iota
	// RunResume continues the directory's latest checkpoint.
	RunResume
	// RunOverwrite moves a run the directory holds aside and starts anew.
	RunOverwrite
)

func (m RunMode) String() string {
	switch m {
	case RunNew:
		return "new"
	case RunResume:
		return "resume"
	case RunOverwrite:
		return "overwrite"
	}
	return fmt.Sprintf("RunMode(%d)", int(m))
}

// RunModeOf is the mode the --resume and --overwrite flags ask for.
func RunModeOf(resume, overwrite bool) (RunMode, error) {
	switch {
	case resume && overwrite:
		return 0, fmt.Errorf("train: --resume continues a run and --overwrite starts it over: give one of them")
	case resume:
		return RunResume, nil
	case overwrite:
		return RunOverwrite, nil
	}
	return RunNew, nil
}

// asideLayout is where RunOverwrite moves a run, for messages.
const asideLayout = "20060102T150405Z"

// PrepareRunDir readies the run directory dir for a run started in mode,
// before New and Resume are called. A directory holds a run when its
// checkpoints directory holds a checkpoint or its metrics.jsonl a record.
//
//   - RunNew makes dir if it is missing. If dir holds a run, it is an error
//     that says what is there and how to go on (--resume, --overwrite or
//     another --run), and nothing is touched.
//   - RunResume recovers dir's checkpoints from a kill (see Recover); it is
//     an error if there is no checkpoint to resume from.
//   - RunOverwrite moves a run that dir holds, with everything else in dir,
//     to the sibling directory <dir>.old-<UTC time> (for example
//     runs/gpt.old-20261122T174658Z; -2, -3, … are added if that exists) and
//     makes dir anew. Nothing is deleted. It returns where the old run went,
//     or "" when dir held no run and nothing was moved.
func PrepareRunDir(dir string, mode RunMode) (moved string, err error) {
	if dir == "" {
		return "", fmt.Errorf("train: no run directory")
	}
	switch mode {
	case RunNew, RunResume, RunOverwrite:
	default:
		return "", fmt.Errorf("train: run directory %s: unknown mode %v", dir, mode)
	}
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		if mode == RunResume {
			return "", fmt.Errorf("train: --resume: there is no run directory %s to resume; to start a new run there, drop --resume", dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("train: run directory: %w", err)
		}
		return "", nil
	case err != nil:
		return "", fmt.Errorf("train: run directory: %w", err)
	case !fi.IsDir():
		return "", fmt.Errorf("train: run directory %s is not a directory", dir)
	}
	if err := Recover(dir); err != nil {
		return "", err
	}
	ckpts, steps, err := runContents(dir)
	if err != nil {
		return "", err
	}
	held := describeRun(ckpts, steps)
	switch mode {
	case RunNew:
		if held != "" {
			return "", fmt.Errorf("train: run directory %s already holds a run (%s): continue it with --resume, start over with --overwrite (which moves it to %s.old-<time>), or choose another --run",
				dir, held, filepath.Clean(dir))
		}
		return "", nil
	case RunResume:
		if _, err := Latest(dir); err != nil {
			if held == "" {
				return "", fmt.Errorf("train: --resume: run directory %s has no checkpoint to resume from (it holds nothing); to start a new run there, drop --resume", dir)
			}
			return "", fmt.Errorf("train: --resume: run directory %s has no checkpoint to resume from (it holds %s); to start over, use --overwrite instead of --resume", dir, held)
		}
		return "", nil
	}
	if held == "" {
		return "", nil
	}
	return moveRunAside(dir, held)
}

// runContents lists the checkpoints of a run directory and counts the
// records of its metrics.jsonl.
func runContents(dir string) (ckpts []string, steps int, err error) {
	entries, err := os.ReadDir(filepath.Join(dir, CheckpointsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("train: run directory: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") { // Recover has resolved the hidden copies
			ckpts = append(ckpts, e.Name())
		}
	}
	sort.Strings(ckpts)
	b, err := os.ReadFile(filepath.Join(dir, MetricsFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("train: run directory: %w", err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			steps++
		}
	}
	return ckpts, steps, nil
}

// describeRun says what a run directory holds: "checkpoints best, final
// and step-000010; metrics.jsonl with 30 records", or "" for nothing.
func describeRun(ckpts []string, steps int) string {
	var parts []string
	switch n := len(ckpts); {
	case n == 1:
		parts = append(parts, "checkpoint "+ckpts[0])
	case n > 1 && n <= 4:
		parts = append(parts, "checkpoints "+strings.Join(ckpts[:n-1], ", ")+" and "+ckpts[n-1])
	case n > 4:
		parts = append(parts, fmt.Sprintf("checkpoints %s, … (%d in all)", strings.Join(ckpts[:3], ", "), n))
	}
	switch {
	case steps == 1:
		parts = append(parts, MetricsFile+" with 1 record")
	case steps > 1:
		parts = append(parts, fmt.Sprintf("%s with %d records", MetricsFile, steps))
	}
	return strings.Join(parts, "; ")
}

// within reports whether the working directory is dir or inside it.
func within(dir string) bool {
	wd, err := os.Getwd()
	if err != nil {
		return false
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	if w, err := filepath.EvalSymlinks(wd); err == nil {
		wd = w
	}
	rel, err := filepath.Rel(dir, wd)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// moveRunAside renames dir to a free <dir>.old-<UTC time> and makes dir
// anew. One rename moves the whole run, so a kill cannot split it.
func moveRunAside(dir, held string) (string, error) {
	clean := filepath.Clean(dir)
	abs, err := filepath.Abs(clean)
	if err != nil {
		return "", fmt.Errorf("train: --overwrite: %w", err)
	}
	if within(abs) {
		return "", fmt.Errorf("train: --overwrite: run directory %s holds a run (%s) but is the working directory or contains it, so it cannot be moved aside; move it yourself or choose another --run", dir, held)
	}
	base := clean + ".old-" + time.Now().UTC().Format(asideLayout)
	aside := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			break
		} else if err != nil {
			return "", fmt.Errorf("train: --overwrite: %w", err)
		}
		aside = fmt.Sprintf("%s-%d", base, i)
	}
	if err := os.Rename(clean, aside); err != nil {
		return "", fmt.Errorf("train: --overwrite: moving the old run (%s) aside: %w; move it yourself or choose another --run", held, err)
	}
	atomicfile.SyncDir(filepath.Dir(abs))
	if err := os.Mkdir(clean, 0o755); err != nil {
		return aside, fmt.Errorf("train: --overwrite: the old run is in %s, but making %s anew: %w", aside, dir, err)
	}
	return aside, nil
}

// PrepareRun is PrepareRunDir for a pipeline's resume and overwrite
// settings; it says on out where an overwritten run went. With
// data-parallel ranks, rank 0 prepares the directory (and recovers its
// checkpoints from a kill) while the others wait, and all stop if it fails.
func PrepareRun(dir string, resume, overwrite bool, out io.Writer) error {
	mode, err := RunModeOf(resume, overwrite)
	if err != nil {
		return err
	}
	var moved string
	err = LeaderFirst(func() error {
		if moved, err = PrepareRunDir(dir, mode); err != nil {
			return err
		}
		return Recover(dir)
	})
	if err != nil {
		return err
	}
	if moved != "" && out != nil {
		fmt.Fprintf(out, "overwrite: moved the old run to %s\n", moved)
	}
	return nil
}

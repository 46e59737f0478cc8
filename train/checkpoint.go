package train

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/internal/ckptfiles"
)

// Checkpoints live in <run>/checkpoints/<name>: step-000100, …, best and
// final. Each holds the model (the Task's files), optimizer.safetensors and
// trainer.json.
const (
	CheckpointsDir = "checkpoints"
	TrainerFile    = ckptfiles.Trainer // trainer.json; internal/ckptfiles names a checkpoint's files
)

// trainerState is trainer.json: what, beside the model and the optimizer,
// makes a resumed run continue exactly.
type trainerState struct {
	Step        int      `json:"step"`
	BestValLoss *float64 `json:"best_val_loss"` // null before the first evaluation
	// BestScore is the best value of the score that picks the best
	// checkpoint (Scoring.BestBy); absent without one.
	BestScore   *float64 `json:"best_score,omitempty"`
	DataState   []byte   `json:"data_state"`
	DropoutCall uint64   `json:"dropout_call"`
}

// state is the trainer's position: what trainer.json holds.
func (t *Trainer) state() (trainerState, error) {
	data, err := t.data.State()
	if err != nil {
		return trainerState{}, fmt.Errorf("data state: %w", err)
	}
	st := trainerState{Step: t.step, DataState: data, DropoutCall: t.dropoutCall, BestScore: t.bestScore}
	if !math.IsInf(t.best, 1) {
		st.BestValLoss = &t.best
	}
	return st, nil
}

// readState reads a checkpoint's trainer.json; a missing one is an
// error that wraps fs.ErrNotExist.
func readState(ckpt string) (trainerState, error) {
	var st trainerState
	b, err := os.ReadFile(filepath.Join(ckpt, TrainerFile))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %w", filepath.Join(ckpt, TrainerFile), err)
	}
	return st, nil
}

// setState moves the trainer and its data to st.
func (t *Trainer) setState(st trainerState) error {
	if err := t.data.Restore(st.DataState); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	t.dropoutCall = st.DropoutCall
	t.step, t.best, t.bestScore = st.Step, math.Inf(1), st.BestScore
	if st.BestValLoss != nil {
		t.best = *st.BestValLoss
	}
	return nil
}

// checkpoint writes the run's state to checkpoints/name and returns the
// directory. The new copy is written and fsynced beside the old one, then
// swapped in (replace.go) so that a kill at any point leaves a complete
// checkpoint of that name, old or new, once recovered.
func (t *Trainer) checkpoint(name string) (string, error) {
	root := filepath.Join(t.cfg.Dir, CheckpointsDir)
	dir := filepath.Join(root, name)
	// Rank 0 writes it while the other ranks wait: a rank that returned
	// at once and exited (after Ctrl-C, which mpirun sends to every rank)
	// would have mpirun kill rank 0 in the middle of the write.
	err := LeaderFirst(func() (err error) {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return fmt.Errorf("train: checkpoint: %w", err)
		}
		if dir, err = replaceDir(root, name, t.writeCheckpoint); err != nil {
			return fmt.Errorf("train: checkpoint %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return dir, nil
}

// writeCheckpoint writes the model (the Task's files), optimizer.safetensors
// and trainer.json into dir.
func (t *Trainer) writeCheckpoint(dir string) error {
	if err := crashPoint("write model"); err != nil {
		return err
	}
	if err := t.task.Save(dir); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if err := crashPoint("write optimizer"); err != nil {
		return err
	}
	if err := t.opt.Save(filepath.Join(dir, StateFile)); err != nil {
		return err
	}
	st, err := t.state()
	if err != nil {
		return err
	}
	js, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := crashPoint("write trainer state"); err != nil {
		return err
	}
	return atomicfile.WriteBytes(filepath.Join(dir, TrainerFile), append(js, '\n'))
}

// Resume restores a run from one of its checkpoint directories: weights,
// optimizer moments, step, data position and dropout masks, so that the run
// goes on exactly as if it had not stopped. Metrics past the checkpoint's
// step are dropped from metrics.jsonl.
func (t *Trainer) Resume(ckpt string) error {
	st, err := readState(ckpt)
	if err != nil {
		return fmt.Errorf("train: resume: %w", err)
	}
	if st.Step < 0 || st.Step > t.cfg.Steps {
		return fmt.Errorf("train: resume: the checkpoint is at step %d, outside this run's %d steps", st.Step, t.cfg.Steps)
	}
	if err := t.task.Load(ckpt); err != nil {
		return fmt.Errorf("train: resume: model: %w", err)
	}
	if err := t.opt.Load(filepath.Join(ckpt, StateFile)); err != nil {
		return fmt.Errorf("train: resume: %w", err)
	}
	if err := t.setState(st); err != nil {
		return fmt.Errorf("train: resume: %w", err)
	}
	recs, err := readMetrics(t.cfg.Dir, t.step)
	if err != nil {
		return err
	}
	t.hist = history{}
	var lines []byte
	for _, r := range recs {
		t.hist.add(r)
		js, _ := json.Marshal(r)
		lines = append(append(lines, js...), '\n')
	}
	if err := atomicfile.WriteBytes(filepath.Join(t.cfg.Dir, MetricsFile), lines); err != nil {
		return fmt.Errorf("train: resume: %w", err)
	}
	return nil
}

// Latest returns the newest checkpoint of a run directory: final if it
// exists, else the highest step-N. It first recovers the run's checkpoints
// from a kill (see Recover).
func Latest(run string) (string, error) {
	// With data-parallel ranks, rank 0 recovers (PrepareRun waits for it)
	// and the others only read.
	if Leader() {
		if err := Recover(run); err != nil {
			return "", err
		}
	}
	root := filepath.Join(run, CheckpointsDir)
	if _, err := os.Stat(filepath.Join(root, "final", TrainerFile)); err == nil {
		return filepath.Join(root, "final"), nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return "", fmt.Errorf("train: no checkpoints in %s: %w", run, err)
	}
	var steps []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "step-") {
			steps = append(steps, e.Name())
		}
	}
	if len(steps) == 0 {
		return "", fmt.Errorf("train: no checkpoints in %s", root)
	}
	sort.Strings(steps)
	return filepath.Join(root, steps[len(steps)-1]), nil
}

// LastCheckpoints returns the n checkpoints of a run directory with the
// highest steps (by their trainer.json), oldest first: the inputs of
// checkpoint averaging (models.Average). step-N and final count, best
// does not (it repeats one of them); of two checkpoints at one step, final
// is kept. Fewer than n checkpoints is an error that says how many there
// are and how often the run saved (save_steps).
func LastCheckpoints(run string, n int) ([]string, error) {
	if n < 1 {
		return nil, fmt.Errorf("train: last checkpoints: n is %d; give at least 1", n)
	}
	if Leader() {
		if err := Recover(run); err != nil {
			return nil, err
		}
	}
	root := filepath.Join(run, CheckpointsDir)
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("train: no checkpoints in %s: %w", run, err)
	}
	type ckpt struct {
		dir  string
		step int
	}
	atStep := make(map[int]ckpt)
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || (name != "final" && !strings.HasPrefix(name, "step-")) {
			continue
		}
		dir := filepath.Join(root, name)
		st, err := readState(dir)
		if err != nil {
			return nil, fmt.Errorf("train: checkpoint %s: %w", dir, err)
		}
		if old, ok := atStep[st.Step]; ok && filepath.Base(old.dir) == "final" {
			continue
		}
		atStep[st.Step] = ckpt{dir, st.Step}
	}
	all := make([]ckpt, 0, len(atStep))
	for _, c := range atStep {
		all = append(all, c)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].step < all[j].step })
	if len(all) < n {
		return nil, fmt.Errorf("train: %s has %d checkpoints at distinct steps, fewer than the %d asked for; save_steps (--save-steps) sets how often a run saves one", run, len(all), n)
	}
	var dirs []string
	for _, c := range all[len(all)-n:] {
		dirs = append(dirs, c.dir)
	}
	return dirs, nil
}

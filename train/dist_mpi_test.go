//go:build mpi

package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/ckptswap"
	"github.com/d73a19ff/zoo/internal/mpi"
)

// The data-parallel tests start the test binary under mpirun -np 2; each
// rank runs rankMain (selected by dpCase) instead of the tests and rank 0
// writes what it trained to dpOut, which the test compares with runs in
// its own process.
const (
	dpCase = "ZOO_DP_CASE"
	dpDir  = "ZOO_DP_DIR"
	dpOut  = "ZOO_DP_OUT"
	// dpNoDropout set turns the toy's dropout off.
	dpNoDropout = "ZOO_DP_NO_DROPOUT"
	// dpBucket is the reduction's bucket size in bytes (SetBucketBytes).
	dpBucket = "ZOO_DP_BUCKET"
	// dpAccumulate is each rank's micro-batches a step (1 if unset).
	dpAccumulate = "ZOO_DP_ACCUMULATE"
)

func TestMain(m *testing.M) {
	if c := os.Getenv(dpCase); c != "" {
		os.Exit(rankMain(c))
	}
	os.Exit(m.Run())
}

// dpResult is what rank 0 reports: its losses and final weights.
type dpResult struct {
	Losses  []float64
	Val     []float64
	Weights map[string][]float32
	// Buckets is how many buckets the gradient was reduced in (0: one
	// Allreduce after the backward pass), and Early how many of them, over
	// the run, started before their backward pass ended.
	Buckets, Early int
}

// halfData serves each toyData batch of toyB rows as two batches of toyB/2
// rows, the first half then the second: two ranks at toyB/2 each see one
// rank's batch of toyB.
type halfData struct {
	d    *toyData
	next []toyBatch
}

func halve(b toyBatch) []toyBatch {
	h := toyB / 2 * toyT
	return []toyBatch{{ids: b.ids[:h], targets: b.targets[:h]}, {ids: b.ids[h:], targets: b.targets[h:]}}
}

func (h *halfData) Next() (Batch, error) {
	if len(h.next) == 0 {
		b, err := h.d.Next()
		if err != nil {
			return nil, err
		}
		h.next = halve(b.(toyBatch))
	}
	b := h.next[0]
	h.next = h.next[1:]
	return b, nil
}

// Skip is Next without the batch (the engine's Skipper path).
func (h *halfData) Skip() error {
	_, err := h.Next()
	return err
}

func (h *halfData) Eval() ([]Batch, error) {
	full, err := h.d.Eval()
	if err != nil {
		return nil, err
	}
	var out []Batch
	for _, b := range full {
		for _, x := range halve(b.(toyBatch)) {
			out = append(out, x)
		}
	}
	return out, nil
}

// State holds the toy generator's state and whether a second half is
// pending (a step always takes both, so it never is at a checkpoint).
func (h *halfData) State() ([]byte, error) {
	if len(h.next) != 0 {
		return nil, errors.New("halfData: a half batch is pending")
	}
	return h.d.State()
}
func (h *halfData) Restore(b []byte) error { h.next = nil; return h.d.Restore(b) }

const dpSteps = 12

// dpConfig is the toy run of these tests; accumulate micro-batches a step.
func dpConfig(dir string, accumulate int) Config {
	cfg := toyConfig(dir, dpSteps)
	cfg.Accumulate, cfg.EvalEvery, cfg.SaveEvery, cfg.CheckEvery = accumulate, 4, 4, 2
	return cfg
}

// train runs the toy task and returns what it trained. rows is the
// micro-batch's rows: toyB/2 with halfData, toyB with toyData.
func trainToy(ctx context.Context, dir string, rows, accumulate int, dropout float64, data Data, task *toyTask) (dpResult, error) {
	if task == nil {
		var err error
		if task, err = newToyTask(1, dropout); err != nil {
			return dpResult{}, err
		}
	}
	task.rows = rows
	tr, err := New(task, data, dpConfig(dir, accumulate))
	if err != nil {
		return dpResult{}, err
	}
	defer tr.Close()
	if latest, err := Latest(dir); err == nil {
		if err := tr.Resume(latest); err != nil {
			return dpResult{}, err
		}
	}
	if _, err := tr.Run(ctx, nil); err != nil {
		return dpResult{}, err
	}
	res, err := collect(dir, task)
	if tr.ov != nil {
		res.Buckets, res.Early = len(tr.ov.buckets), tr.ov.early
	}
	return res, err
}

func collect(dir string, task *toyTask) (dpResult, error) {
	recs, err := readMetrics(dir, 1<<30)
	if err != nil {
		return dpResult{}, err
	}
	res := dpResult{Weights: map[string][]float32{}}
	for _, r := range recs {
		res.Losses = append(res.Losses, r.Loss)
		if r.ValLoss != nil {
			res.Val = append(res.Val, *r.ValLoss)
		}
	}
	for _, p := range task.store.Params() {
		res.Weights[p.Name] = append([]float32(nil), p.Value.Float32s()...)
	}
	return res, nil
}

// rankMain is one rank of a case: "equal" trains dpSteps steps at toyB/2
// rows a rank; "stop" does the same but rank 0 is interrupted during step
// 6 (the ranks must stop together after it and save it), and "resume"
// goes on from there; "die" has rank 1 exit at step 3 and "hang" has it
// stop answering, with a 2 s timeout.
func rankMain(name string) int {
	c, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c.SetTimeout(20 * time.Second)
	SetWorld(c)
	if v := os.Getenv(dpBucket); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		SetBucketBytes(n)
	}
	dir := os.Getenv(dpDir)
	data := &halfData{d: newToyData(3)}
	dropout := 0.1
	if os.Getenv(dpNoDropout) != "" {
		dropout = 0
	}
	task, err := newToyTask(1, dropout)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	switch name {
	case "stop":
		data.d.onNext = func(call int) {
			if call == 6 && c.Rank() == 0 { // toyData calls: one a step (two halves)
				cancel()
			}
		}
		// Rank 0 takes its time over the interrupted step's checkpoint,
		// so that a rank 1 that did not wait for it would have exited
		// (below) and mpirun would have killed rank 0 in mid-write.
		ckptswap.SetCrashHook(func(op string) error {
			if op == "write model" && ctx.Err() != nil {
				time.Sleep(2 * time.Second)
			}
			return nil
		})
	case "diverge":
		data.d.onNext = func(call int) {
			if call == 5 && c.Rank() == 1 {
				task.store.Params()[0].Value.Float32s()[0] += 1e-6
			}
		}
	case "die", "hang":
		c.SetTimeout(2 * time.Second)
		data.d.onNext = func(call int) {
			if call == 3 && c.Rank() == 1 {
				if name == "die" {
					os.Exit(7)
				}
				time.Sleep(time.Hour)
			}
		}
	}
	if err := PrepareRun(dir, name == "resume", false, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	accumulate := 1
	if v := os.Getenv(dpAccumulate); v != "" {
		if accumulate, err = strconv.Atoi(v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	res, err := trainToy(ctx, dir, toyB/2, accumulate, dropout, data, task)
	if name == "stop" {
		if !errors.Is(err, ErrInterrupted) {
			fmt.Fprintf(os.Stderr, "rank %d: want ErrInterrupted, got %v\n", c.Rank(), err)
			return 1
		}
		if c.Rank() != 0 {
			return interruptedExit // as zoo does: at once, without Finalize
		}
		err = nil
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: %v\n", c.Rank(), err)
		return 1
	}
	if c.Rank() == 0 && name != "stop" {
		js, _ := json.Marshal(res)
		if err := os.WriteFile(os.Getenv(dpOut), js, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// launch runs a case under mpirun -np 2 in dir, within limit.
func launch(t *testing.T, name, dir, out string, limit time.Duration, env ...string) (string, time.Duration, error) {
	t.Helper()
	path, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun is not on PATH (apt-get install openmpi-bin libopenmpi-dev)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	args := []string{"-np", "2", "--allow-run-as-root", "--oversubscribe",
		"-x", dpCase + "=" + name, "-x", dpDir + "=" + dir, "-x", dpOut + "=" + out}
	for _, e := range env {
		args = append(args, "-x", e)
	}
	cmd := exec.CommandContext(ctx, path, append(args, os.Args[0])...)
	began := time.Now()
	b, err := cmd.CombinedOutput()
	took := time.Since(began)
	if ctx.Err() != nil {
		t.Fatalf("case %s: mpirun did not finish within %v (a hang); output:\n%s", name, limit, b)
	}
	return string(b), took, err
}

func readResult(t *testing.T, path string) dpResult {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var r dpResult
	require.NoError(t, json.Unmarshal(b, &r))
	return r
}

// Two ranks at toyB/2 rows each are one rank accumulating two micro-batches
// of toyB/2, bit for bit (the same micro-batches, dropout masks and sums),
// and one rank at toyB rows within float tolerance (another summation
// order in the products; dropout masks differ by shape, so that
// comparison runs without dropout).
func TestDataParallelTwoRanksEqualOne(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(tmp, "two.json")
	log, _, err := launch(t, "equal", filepath.Join(tmp, "two"), out, 2*time.Minute)
	require.NoError(t, err, log)
	two := readResult(t, out)
	require.Len(t, two.Losses, dpSteps)
	require.Equal(t, 1, two.Buckets, "the toy's gradient fits one bucket of the default size")

	one, err := trainToy(context.Background(), filepath.Join(tmp, "one"), toyB/2, 2, 0.1, &halfData{d: newToyData(3)}, nil)
	require.NoError(t, err)
	require.Equal(t, one.Losses, two.Losses, "losses: 2 ranks × 1 micro-batch against 1 rank × 2")
	require.Equal(t, one.Val, two.Val)
	require.Equal(t, one.Weights, two.Weights)
	require.Len(t, one.Val, dpSteps/4)

	// The same with a bucket per parameter, started while the backward
	// pass runs (the head's before the embedding's gradient is computed),
	// and with the overlap off (one Allreduce after the backward pass).
	for _, c := range []struct {
		bytes             string
		buckets, minEarly int
	}{{"4", 3, dpSteps}, {"0", 0, 0}} {
		out := filepath.Join(tmp, "two-"+c.bytes+".json")
		log, _, err := launch(t, "equal", filepath.Join(tmp, "two-"+c.bytes), out, 2*time.Minute, dpBucket+"="+c.bytes)
		require.NoError(t, err, log)
		got := readResult(t, out)
		require.Equal(t, c.buckets, got.Buckets, "buckets of %s bytes", c.bytes)
		require.GreaterOrEqual(t, got.Early, c.minEarly, "buckets started during a backward pass")
		require.Equal(t, one.Losses, got.Losses, "buckets of %s bytes", c.bytes)
		require.Equal(t, one.Weights, got.Weights, "buckets of %s bytes", c.bytes)
	}

	// Each rank accumulating two micro-batches: the buckets add the last
	// one's gradient to the first's, as the reduction after the backward
	// pass does (bit for bit); one process accumulating four sums the
	// same gradients in another order (within float tolerance).
	acc := map[string]dpResult{}
	for _, bytes := range []string{"4", "0"} {
		out = filepath.Join(tmp, "two-acc2-"+bytes+".json")
		log, _, err = launch(t, "equal", filepath.Join(tmp, "two-acc2-"+bytes), out, 2*time.Minute, dpBucket+"="+bytes, dpAccumulate+"=2")
		require.NoError(t, err, log)
		acc[bytes] = readResult(t, out)
	}
	require.GreaterOrEqual(t, acc["4"].Early, dpSteps)
	require.Equal(t, acc["0"].Losses, acc["4"].Losses, "2 ranks × 2 micro-batches, buckets during the backward pass or one reduction after it")
	require.Equal(t, acc["0"].Weights, acc["4"].Weights)
	four, err := trainToy(context.Background(), filepath.Join(tmp, "four"), toyB/2, 4, 0.1, &halfData{d: newToyData(3)}, nil)
	require.NoError(t, err)
	require.InDeltaSlice(t, four.Losses, acc["4"].Losses, 1e-6, "2 ranks × 2 micro-batches against 1 rank × 4")

	// Against one batch of toyB rows: no dropout on either side.
	out = filepath.Join(tmp, "two-nodrop.json")
	log, _, err = launch(t, "equal", filepath.Join(tmp, "two-nodrop"), out, 2*time.Minute, dpNoDropout+"=1")
	require.NoError(t, err, log)
	two = readResult(t, out)
	whole, err := trainToy(context.Background(), filepath.Join(tmp, "whole"), toyB, 1, 0, newToyData(3), nil)
	require.NoError(t, err)
	require.Len(t, two.Losses, dpSteps)
	require.InDeltaSlice(t, whole.Losses, two.Losses, 1e-5)
	require.InDeltaSlice(t, whole.Val, two.Val, 1e-5)
	for name, w := range whole.Weights {
		require.InDeltaSlice(t, w, two.Weights[name], 1e-5, name)
		require.NotEqual(t, w, one.Weights[name], "%s: the dropout run must differ, or the comparison proves nothing", name)
	}
}

// interruptedExit is the exit code of a rank other than 0 after an
// interruption in the "stop" case: it leaves at once, as zoo does with an
// error, and mpirun then stops the others.
const interruptedExit = 3

// interruptedAndResumed: rank 0 alone is interrupted in step 6; both ranks
// finish that step, rank 0 saves it while rank 1 waits (then exits at once,
// as zoo does), and a new 2-rank job resumes from it to the same weights as
// the uninterrupted run, bit for bit.
func TestDataParallelResumesExactly(t *testing.T) {
	tmp := t.TempDir()
	whole := filepath.Join(tmp, "whole.json")
	log, _, err := launch(t, "equal", filepath.Join(tmp, "whole"), whole, 2*time.Minute)
	require.NoError(t, err, log)

	split := filepath.Join(tmp, "split")
	log, _, err = launch(t, "stop", split, "", 2*time.Minute)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, log)
	require.Equal(t, interruptedExit, exit.ExitCode(), "rank 1's exit after the interruption; output:\n%s", log)
	latest, err := Latest(split)
	require.NoError(t, err)
	require.Equal(t, "step-000006", filepath.Base(latest), log)
	resumed := filepath.Join(tmp, "resumed.json")
	log, _, err = launch(t, "resume", split, resumed, 2*time.Minute)
	require.NoError(t, err, log)
	a, b := readResult(t, whole), readResult(t, resumed)
	require.Equal(t, a.Weights, b.Weights)
	require.Equal(t, a.Losses, b.Losses)
}

// Weights that drift apart on one rank stop the run at the next checksum
// (every 2 steps here), naming the ranks.
func TestDataParallelChecksums(t *testing.T) {
	tmp := t.TempDir()
	log, _, err := launch(t, "diverge", filepath.Join(tmp, "run"), filepath.Join(tmp, "out.json"), time.Minute)
	require.Error(t, err, log)
	require.Contains(t, log, "differ (checksums")
}

// A rank that dies or hangs does not hang the job: mpirun ends it with an
// error within seconds, and a hung peer is named by the survivor's timeout.
func TestDataParallelDeadRank(t *testing.T) {
	for _, name := range []string{"die", "hang"} {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			log, took, err := launch(t, name, filepath.Join(tmp, "run"), filepath.Join(tmp, "out.json"), time.Minute)
			require.Error(t, err, log)
			require.Less(t, took, 30*time.Second, log)
			if name == "hang" {
				require.True(t, strings.Contains(log, "did not complete after"), log)
			}
			_, statErr := os.Stat(filepath.Join(tmp, "out.json"))
			require.True(t, os.IsNotExist(statErr), "rank 0 must not have finished")
		})
	}
}

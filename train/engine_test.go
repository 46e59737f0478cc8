package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// toyTask is a bigram language model: embedding, dropout, a linear head.
type toyTask struct {
	store   *layers.Store
	emb     *layers.Embedding
	head    *layers.Linear
	dropout float64
	rows    int  // batch rows; 0 means toyB
	report  bool // report the loss twice (as toy_loss) and the accuracy
}

const toyV, toyD, toyB, toyT = 12, 8, 4, 6

func newToy(t *testing.T, seed uint64, dropout float64) *toyTask {
	k, err := newToyTask(seed, dropout)
	require.NoError(t, err)
	return k
}

func newToyTask(seed uint64, dropout float64) (*toyTask, error) {
	s, err := layers.NewStore(layers.WithSeed(seed), layers.WithInitStd(0.1))
	if err != nil {
		return nil, err
	}
	emb, err := layers.NewEmbedding(s.Root().Sub("emb"), toyV, toyD)
	if err != nil {
		return nil, err
	}
	head, err := layers.NewLinear(s.Root().Sub("head"), toyD, toyV, true)
	if err != nil {
		return nil, err
	}
	return &toyTask{store: s, emb: emb, head: head, dropout: dropout}, nil
}

func (k *toyTask) Store() *layers.Store { return k.store }

func (k *toyTask) Loss(g *layers.Graph) (*gorgonia.Node, func(Batch) error, error) {
	rows := k.rows
	if rows == 0 {
		rows = toyB
	}
	ids, targets := g.IntInput("ids", rows, toyT), g.IntInput("targets", rows, toyT)
	scale := g.Input("scale", rows, toyT, toyD) // ones, or NaN to poison a batch
	h, err := k.emb.Forward(g, ids)
	if err != nil {
		return nil, nil, err
	}
	if h, err = gorgonia.HadamardProd(h, scale); err != nil {
		return nil, nil, err
	}
	if h, err = (layers.Dropout{P: k.dropout}).Forward(g, h); err != nil {
		return nil, nil, err
	}
	if h, err = k.head.Forward(g, h); err != nil {
		return nil, nil, err
	}
	loss, err := layers.CrossEntropy(h, targets, layers.IgnoreIndex, 0)
	if err == nil && k.report {
		acc, aerr := layers.Accuracy(h, targets, layers.IgnoreIndex)
		if aerr != nil {
			return nil, nil, aerr
		}
		if err = g.Report("toy_loss", loss); err == nil {
			err = g.Report("accuracy", acc)
		}
	}
	load := func(b Batch) error {
		tb := b.(toyBatch)
		copy(ids.Value().Data().([]int), tb.ids)
		copy(targets.Value().Data().([]int), tb.targets)
		for i := range scale.Value().Data().([]float32) {
			scale.Value().Data().([]float32)[i] = 1
			if tb.poison {
				scale.Value().Data().([]float32)[i] = float32(math.NaN())
			}
		}
		return nil
	}
	return loss, load, err
}

func (k *toyTask) Save(dir string) error {
	return k.store.Save(filepath.Join(dir, layers.WeightsFile), nil)
}
func (k *toyTask) Load(dir string) error { return k.store.Load(filepath.Join(dir, layers.WeightsFile)) }

type toyBatch struct {
	ids, targets []int
	poison       bool
}

func (b toyBatch) Targets() int {
	n := 0
	for _, t := range b.targets {
		if t != layers.IgnoreIndex {
			n++
		}
	}
	return n
}

// toyData draws windows of a fixed periodic sequence from a seeded PCG.
type toyData struct {
	pcg    *rand.PCG
	calls  int
	onNext func(call int) // a hook for the tests
	poison int            // the call that returns a NaN-making batch, or 0
}

func newToyData(seed uint64) *toyData { return &toyData{pcg: rand.NewPCG(seed, 1)} }

func seqAt(i int) int { return (i*5 + i/7) % toyV }

func (d *toyData) batch(r *rand.Rand) toyBatch {
	b := toyBatch{ids: make([]int, toyB*toyT), targets: make([]int, toyB*toyT)}
	for row := 0; row < toyB; row++ {
		off := r.IntN(1000)
		for j := 0; j < toyT; j++ {
			b.ids[row*toyT+j], b.targets[row*toyT+j] = seqAt(off+j), seqAt(off+j+1)
		}
	}
	return b
}

func (d *toyData) Next() (Batch, error) {
	d.calls++
	if d.onNext != nil {
		d.onNext(d.calls)
	}
	b := d.batch(rand.New(d.pcg))
	b.poison = d.calls == d.poison
	return b, nil
}

func (d *toyData) Eval() ([]Batch, error) {
	r := rand.New(rand.NewPCG(99, 99))
	return []Batch{d.batch(r), d.batch(r)}, nil
}

func (d *toyData) State() ([]byte, error) { return d.pcg.MarshalBinary() }
func (d *toyData) Restore(b []byte) error { return d.pcg.UnmarshalBinary(b) }

func toyConfig(dir string, steps int) Config {
	sched, _ := WarmupCosine(3e-2, 3e-3, 3, steps)
	return Config{Steps: steps, Accumulate: 2, ClipNorm: 1, EvalEvery: 5, SaveEvery: 5, Dir: dir, Seed: 7,
		AdamW: DefaultAdamWConfig(), Schedule: sched}
}

func TestRunLearns(t *testing.T) {
	dir := t.TempDir()
	tr, err := New(newToy(t, 1, 0.1), newToyData(1), toyConfig(dir, 30))
	require.NoError(t, err)
	defer tr.Close()
	var progress strings.Builder
	res, err := tr.Run(context.Background(), &progress)
	require.NoError(t, err)
	require.Equal(t, 30, res.Steps)
	require.Less(t, res.ValLoss, math.Log(toyV)/2, "the bigram model learns the sequence")
	require.LessOrEqual(t, res.BestLoss, res.ValLoss)
	for _, f := range []string{MetricsFile, PlotFile, "checkpoints/final/" + TrainerFile, "checkpoints/best/" + StateFile, "checkpoints/step-000025/" + layers.WeightsFile} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
	recs, err := readMetrics(dir, 1<<30)
	require.NoError(t, err)
	require.Len(t, recs, 30)
	require.NotNil(t, recs[4].ValLoss, "evaluated at step 5")
	require.Contains(t, progress.String(), "loss")
	latest, err := Latest(dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, CheckpointsDir, "final"), latest)
}

// Training 2N steps equals training N steps, being interrupted, and resuming
// for N more in a new process: identical weights, bit for bit.
func TestRunResumesExactly(t *testing.T) { runResumesExactly(t, func(*Config) {}) }

// runResumesExactly is TestRunResumesExactly with set applied to every
// run's configuration.
func runResumesExactly(t *testing.T, set func(*Config)) {
	const n = 10
	toyConfig := func(dir string, steps int) Config {
		c := toyConfig(dir, steps)
		set(&c)
		return c
	}
	whole := t.TempDir()
	a := newToy(t, 1, 0.2)
	tr, err := New(a, newToyData(3), toyConfig(whole, 2*n))
	require.NoError(t, err)
	_, err = tr.Run(context.Background(), nil)
	require.NoError(t, err)
	tr.Close()

	split := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	data := newToyData(3)
	data.onNext = func(call int) {
		if call == 2*n { // the last micro-batch of step n
			cancel()
		}
	}
	tr, err = New(newToy(t, 1, 0.2), data, toyConfig(split, 2*n))
	require.NoError(t, err)
	_, err = tr.Run(ctx, nil)
	require.True(t, errors.Is(err, ErrInterrupted), "%v", err)
	tr.Close()
	ckpt, err := Latest(split)
	require.NoError(t, err)
	require.Equal(t, "step-000010", filepath.Base(ckpt))

	b := newToy(t, 42, 0.2) // other initial weights: all must come from the checkpoint
	tr, err = New(b, newToyData(1234), toyConfig(split, 2*n))
	require.NoError(t, err)
	require.NoError(t, tr.Resume(ckpt))
	_, err = tr.Run(context.Background(), nil)
	require.NoError(t, err)
	tr.Close()
	for i, p := range a.store.Params() {
		require.Equal(t, p.Value.Data(), b.store.Params()[i].Value.Data(), p.Name)
	}
	recs, err := readMetrics(split, 1<<30)
	require.NoError(t, err)
	require.Len(t, recs, 2*n)
}

// A NaN loss stops the run naming the step, and the last good checkpoint
// stays.
func TestNaNStops(t *testing.T) {
	dir := t.TempDir()
	cfg := toyConfig(dir, 20)
	cfg.SaveEvery = 2
	data := newToyData(1)
	data.poison = 13 // step 7's first micro-batch
	tr, err := New(newToy(t, 1, 0), data, cfg)
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Run(context.Background(), nil)
	require.ErrorContains(t, err, "step 7: the loss is NaN")
	latest, err := Latest(dir)
	require.NoError(t, err)
	require.Equal(t, "step-000006", filepath.Base(latest))
	tr2, err := New(newToy(t, 2, 0), newToyData(1), cfg)
	require.NoError(t, err)
	require.NoError(t, tr2.Resume(latest), "the checkpoint is whole")
	tr2.Close()
}

// With accumulation, a step's loss is the mean over all its target tokens,
// not the mean of the micro-batches' means.
func TestAccumulationWeightsByTargets(t *testing.T) {
	task := newToy(t, 1, 0)
	r := rand.New(rand.NewPCG(5, 5))
	d := &toyData{}
	a, b := d.batch(r), d.batch(r)
	for i := 1; i < len(b.targets); i++ {
		b.targets[i] = layers.IgnoreIndex // b has one target, a has 24
	}
	ev, err := compile(task.Store(), false, 0, false, task.Loss)
	require.NoError(t, err)
	la, err := ev.run(a)
	require.NoError(t, err)
	lb, err := ev.run(b)
	require.NoError(t, err)

	fixed := &fixedData{batches: []Batch{a, b}}
	cfg := toyConfig(t.TempDir(), 1)
	cfg.ClipNorm = 0
	var err2 error
	cfg.Schedule, err2 = Constant(1e-3)
	require.NoError(t, err2)
	tr, err := New(task, fixed, cfg)
	require.NoError(t, err)
	defer tr.Close()
	rec, _, err := tr.trainStep(context.Background())
	require.NoError(t, err)
	require.InDelta(t, (24*la+1*lb)/25, rec.Loss, 1e-6)
	require.Greater(t, math.Abs((la+lb)/2-rec.Loss), 1e-3, "not the mean of means")
}

// Accumulating 4 micro-batches of B/4 rows gives the gradient of one batch
// of B rows, even when the rows hold different numbers of targets.
func TestAccumulationEqualsOneBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	big := (&toyData{}).batch(r) // toyB = 4 rows
	for i := 2; i < toyT; i++ {
		big.targets[i] = layers.IgnoreIndex // row 0 keeps 2 targets, the others 6
	}
	var quarters []Batch
	for row := 0; row < toyB; row++ {
		quarters = append(quarters, toyBatch{ids: big.ids[row*toyT : (row+1)*toyT], targets: big.targets[row*toyT : (row+1)*toyT]})
	}
	sched, err := Constant(1e-3)
	require.NoError(t, err)
	grads := func(rows, accumulate int, batches []Batch) ([]*tensor.Dense, float64) {
		task := newToy(t, 1, 0)
		task.rows = rows
		cfg := Config{Steps: 1, Accumulate: accumulate, Dir: t.TempDir(), AdamW: DefaultAdamWConfig(), Schedule: sched}
		tr, err := New(task, &fixedData{batches: batches}, cfg)
		require.NoError(t, err)
		defer tr.Close()
		loss, _, _, _, err := tr.accumulate(context.Background())
		require.NoError(t, err)
		return tr.summed, loss
	}
	one, l1 := grads(toyB, 1, []Batch{big})
	four, l4 := grads(1, 4, quarters)
	require.InDelta(t, l1, l4, 1e-6)
	for i := range one {
		a, b := one[i].Data().([]float32), four[i].Data().([]float32)
		for j := range a {
			require.InDelta(t, a[j], b[j], 1e-6, "parameter %d value %d", i, j)
		}
	}
}

// A corrupted or truncated checkpoint is a clear error on resume, and the
// run's other checkpoints stay usable.
func TestResumeRejectsCorruptCheckpoints(t *testing.T) {
	dir := t.TempDir()
	tr, err := New(newToy(t, 1, 0), newToyData(1), toyConfig(dir, 10))
	require.NoError(t, err)
	_, err = tr.Run(context.Background(), nil)
	require.NoError(t, err)
	tr.Close()
	step5 := filepath.Join(dir, CheckpointsDir, "step-000005")
	weights := filepath.Join(step5, layers.WeightsFile)
	b, err := os.ReadFile(weights)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(weights, b[:len(b)/2], 0o644))
	tr, err = New(newToy(t, 1, 0), newToyData(1), toyConfig(dir, 10))
	require.NoError(t, err)
	defer tr.Close()
	require.ErrorContains(t, tr.Resume(step5), "safetensors")
	require.NoError(t, os.WriteFile(filepath.Join(step5, TrainerFile), []byte("{not json"), 0o644))
	require.ErrorContains(t, tr.Resume(step5), TrainerFile)
	require.NoError(t, tr.Resume(filepath.Join(dir, CheckpointsDir, "final")), "other checkpoints are intact")
}

type fixedData struct {
	batches []Batch
	i       int
}

func (f *fixedData) Next() (Batch, error) {
	b := f.batches[f.i%len(f.batches)]
	f.i++
	return b, nil
}
func (f *fixedData) Eval() ([]Batch, error) { return f.batches, nil }
func (f *fixedData) State() ([]byte, error) { return nil, nil }
func (f *fixedData) Restore(b []byte) error { return nil }

func TestConfigErrors(t *testing.T) {
	good := toyConfig(t.TempDir(), 5) // 3 steps would leave no schedule (warmup 3)
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Steps = 0 }, "steps 0"},
		{func(c *Config) { c.Dir = "" }, "no run directory"},
		{func(c *Config) { c.Schedule = nil }, "no learning-rate schedule"},
		{func(c *Config) { c.ClipNorm = -1 }, "clip norm"},
		{func(c *Config) { c.BestBy = "wer" }, `best_by "wer" needs scores`},
	} {
		cfg := good
		c.edit(&cfg)
		_, err := New(newToy(t, 1, 0), newToyData(1), cfg)
		require.ErrorContains(t, err, c.want)
	}
	_ = tensor.Float32
}

// A task's reported scalars reach metrics.jsonl (train and validation),
// the result, the log lines and the plot; a part equal to the loss is
// recorded equal to it, so the weighting matches the loss's.
func TestReports(t *testing.T) {
	dir := t.TempDir()
	task := newToy(t, 1, 0)
	task.report = true
	tr, err := New(task, newToyData(1), toyConfig(dir, 10))
	require.NoError(t, err)
	defer tr.Close()
	var progress strings.Builder
	res, err := tr.Run(context.Background(), &progress)
	require.NoError(t, err)
	require.InDelta(t, res.ValLoss, res.ValParts["toy_loss"], 1e-6)
	require.Greater(t, res.ValParts["accuracy"], 0.3, "the toy model learns")
	recs, err := readMetrics(dir, 1<<30)
	require.NoError(t, err)
	for _, r := range recs {
		require.InDelta(t, r.Loss, r.Parts["toy_loss"], 1e-6)
		require.Contains(t, r.Parts, "accuracy")
	}
	require.NotNil(t, recs[4].ValParts)
	require.Contains(t, progress.String(), "accuracy")
	_, err = os.Stat(filepath.Join(dir, PlotFile))
	require.NoError(t, err)

	g := task.store.NewGraph()
	n := g.Input("x", 2)
	require.ErrorContains(t, g.Report("x", n), "scalar")
}

// groupedData records what New tells a StepGrouper.
type groupedData struct {
	*toyData
	group []int
	fail  error
}

func (d *groupedData) GroupSteps(n int) error {
	d.group = append(d.group, n)
	return d.fail
}

// New tells a StepGrouper the micro-batches of a step (accumulation ×
// ranks) once, before any batch; its error stops New.
func TestNewGroupsSteps(t *testing.T) {
	d := &groupedData{toyData: newToyData(1)}
	cfg := toyConfig(t.TempDir(), 4)
	cfg.Accumulate = 3
	tr, err := New(newToy(t, 1, 0), d, cfg)
	require.NoError(t, err)
	tr.Close()
	require.Equal(t, []int{3 * Ranks()}, d.group)
	require.Zero(t, d.calls, "no batch drawn before the grouping")

	d = &groupedData{toyData: newToyData(1), fail: errors.New("plan under way")}
	_, err = New(newToy(t, 1, 0), d, cfg)
	require.ErrorContains(t, err, "train: data: plan under way")
}

// scripted scores the evaluations in turn with the values given, as
// {"wer": v, "acc": -v}, counting the calls.
type scripted struct {
	vals  []float64
	calls int
}

func (s *scripted) scores(context.Context) (map[string]float64, error) {
	v := s.vals[s.calls%len(s.vals)]
	s.calls++
	return map[string]float64{"wer": v, "acc": -v}, nil
}

// bestStep is the step of the run's best checkpoint.
func bestStep(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, CheckpointsDir, "best", TrainerFile))
	require.NoError(t, err)
	var st trainerState
	require.NoError(t, json.Unmarshal(b, &st))
	return st.Step
}

// Scores are computed at every evaluation and reach metrics.jsonl, the
// result and the log lines; with BestBy the best checkpoint is the one of
// the best score, lowest or highest, not of the lowest loss (which falls
// throughout); without, it is the lowest loss's. A resumed run keeps the
// best score: a later, worse one does not replace the best checkpoint.
func TestScoresPickBest(t *testing.T) {
	for _, c := range []struct {
		by     string
		higher bool
		want   int
	}{{"wer", false, 10}, {"acc", true, 10}, {"wer", true, 15}, {"", false, 20}} {
		dir := t.TempDir()
		cfg := toyConfig(dir, 20) // evaluations at 5, 10, 15, 20
		sc := &scripted{vals: []float64{5, 2, 9, 3}}
		cfg.Scoring = Scoring{Scores: sc.scores, BestBy: c.by, HigherIsBetter: c.higher}
		tr, err := New(newToy(t, 1, 0), newToyData(1), cfg)
		require.NoError(t, err)
		var progress strings.Builder
		res, err := tr.Run(context.Background(), &progress)
		tr.Close()
		require.NoError(t, err)
		require.Equal(t, 4, sc.calls)
		require.Equal(t, map[string]float64{"wer": 3, "acc": -3}, res.ValScores)
		require.Equal(t, c.want, bestStep(t, dir), "best by %q, higher %v", c.by, c.higher)
		recs, err := readMetrics(dir, 1<<30)
		require.NoError(t, err)
		require.Equal(t, scalars{"wer": 2, "acc": -2}, recs[9].ValScores)
		require.Nil(t, recs[8].ValScores)
		require.Contains(t, progress.String(), "[acc -2.0000 wer 2.0000]")
	}

	// Interrupted at step 12 (best wer 2, at step 10) and resumed, the run
	// meets wer 3 at step 15: the best checkpoint stays step 10's.
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	data := newToyData(1)
	data.onNext = func(call int) {
		if call == 2*12 {
			cancel()
		}
	}
	sc := &scripted{vals: []float64{5, 2}}
	cfg := toyConfig(dir, 15)
	cfg.Scoring = Scoring{Scores: sc.scores, BestBy: "wer"}
	tr, err := New(newToy(t, 1, 0), data, cfg)
	require.NoError(t, err)
	_, err = tr.Run(ctx, nil)
	tr.Close()
	require.ErrorIs(t, err, ErrInterrupted)
	require.Equal(t, 10, bestStep(t, dir))
	cfg.Scoring.Scores = (&scripted{vals: []float64{3}}).scores
	tr, err = New(newToy(t, 1, 0), newToyData(1), cfg)
	require.NoError(t, err)
	defer tr.Close()
	ckpt, err := Latest(dir)
	require.NoError(t, err)
	require.NoError(t, tr.Resume(ckpt))
	_, err = tr.Run(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, 10, bestStep(t, dir), "wer 3 at step 15 is worse than step 10's 2")

	// A BestBy that the scores do not give is an error naming them.
	cfg = toyConfig(t.TempDir(), 5)
	cfg.Scoring = Scoring{Scores: sc.scores, BestBy: "bleu"}
	tr2, err := New(newToy(t, 1, 0), newToyData(1), cfg)
	require.NoError(t, err)
	defer tr2.Close()
	_, err = tr2.Run(context.Background(), nil)
	require.ErrorContains(t, err, `best_by "bleu" is not one of the scores: acc -5.0000 wer 5.0000`)
}

// With LoadBestAtEnd the model ends the run holding the best checkpoint's
// weights (step 10's, the lowest wer), not the last step's, and says so;
// without it, the last step's. A run whose evaluations never gave a best
// (every score NaN) keeps the last step's weights and says that.
func TestLoadBestAtEnd(t *testing.T) {
	load := func(dir, name string) [][]float32 {
		k := newToy(t, 9, 0)
		require.NoError(t, k.Load(filepath.Join(dir, CheckpointsDir, name)))
		return weightsOf(k)
	}
	for _, loadBest := range []bool{true, false} {
		dir := t.TempDir()
		cfg := toyConfig(dir, 20) // evaluations at 5, 10, 15, 20
		// Scores are scripted per weights: the same weights scored again
		// (after load_best_model_at_end) score as they did.
		k := newToy(t, 1, 0)
		sc, seen := &scripted{vals: []float64{5, 2, 9, 3}}, map[string]map[string]float64{}
		cfg.Scoring = Scoring{BestBy: "wer", Scores: func(ctx context.Context) (map[string]float64, error) {
			key := fmt.Sprint(weightsOf(k))
			if m, ok := seen[key]; ok {
				return m, nil
			}
			m, err := sc.scores(ctx)
			seen[key] = m
			return m, err
		}}
		cfg.LoadBestAtEnd = loadBest
		tr, err := New(k, newToyData(1), cfg)
		require.NoError(t, err)
		var progress strings.Builder
		res, err := tr.Run(context.Background(), &progress)
		tr.Close()
		require.NoError(t, err)
		best, final := load(dir, "best"), load(dir, "final")
		require.NotEqual(t, best, final)
		if !loadBest {
			require.Equal(t, final, weightsOf(k))
			require.Empty(t, res.Best)
			require.NotContains(t, progress.String(), "load_best_model_at_end")
			continue
		}
		require.Equal(t, best, weightsOf(k), "the model holds step 10's weights")
		require.Equal(t, filepath.Join(dir, CheckpointsDir, "best"), res.Best)
		require.Equal(t, 10, res.BestStep)
		// The result's validation numbers are the loaded model's: step
		// 10's loss as metrics.jsonl recorded it, and its scores.
		recs, err := readMetrics(dir, 1<<30)
		require.NoError(t, err)
		require.Equal(t, 10, recs[9].Step)
		require.Equal(t, *recs[9].ValLoss, res.ValLoss)
		require.NotEqual(t, *recs[19].ValLoss, res.ValLoss)
		require.Equal(t, map[string]float64{"wer": 2, "acc": -2}, res.ValScores)
		require.Equal(t, 4, sc.calls, "the best weights are scored again, not as new")
		require.Contains(t, progress.String(), fmt.Sprintf("load_best_model_at_end: the model now holds %s (step 10 of 20, wer 2; val loss %.4f)", res.Best, res.ValLoss))
	}
	dir := t.TempDir()
	cfg := toyConfig(dir, 10)
	cfg.Scoring = Scoring{Scores: (&scripted{vals: []float64{math.NaN(), math.NaN()}}).scores, BestBy: "wer"}
	cfg.LoadBestAtEnd = true
	k := newToy(t, 1, 0)
	tr, err := New(k, newToyData(1), cfg)
	require.NoError(t, err)
	defer tr.Close()
	var progress strings.Builder
	res, err := tr.Run(context.Background(), &progress)
	require.NoError(t, err)
	require.Empty(t, res.Best)
	require.Equal(t, load(dir, "final"), weightsOf(k))
	require.Contains(t, progress.String(), "load_best_model_at_end: no best checkpoint in "+filepath.Join(dir, CheckpointsDir)+"; the model keeps the last step's weights")
	// The NaN scores are null in metrics.jsonl (JSON has no NaN) and NaN
	// again when read back.
	b, err := os.ReadFile(filepath.Join(dir, MetricsFile))
	require.NoError(t, err)
	require.Contains(t, string(b), `"val_scores":{"acc":null,"wer":null}`)
	recs, err := readMetrics(dir, 1<<30)
	require.NoError(t, err)
	require.True(t, math.IsNaN(recs[4].ValScores["wer"]))
}

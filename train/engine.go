package train

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"time"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/layers"
)

// Batch is one micro-batch of a model family's data.
type Batch interface {
	// Targets is how many target tokens (labels that are not ignored) the
	// batch holds: a step's loss is normalised by the total over its
	// micro-batches, not by an average of averages.
	Targets() int
}

// Data gives the engine its batches.
type Data interface {
	// Next returns the next training micro-batch.
	Next() (Batch, error)
	// Eval returns the validation batches: the same ones at every evaluation.
	Eval() ([]Batch, error)
	// State and Restore save and restore the position in the training data,
	// so that a resumed run sees the batches it would have seen.
	State() ([]byte, error)
	Restore(state []byte) error
}

// Task is what a model family gives the engine.
type Task interface {
	// Store holds the parameters to train.
	Store() *layers.Store
	// Loss builds on g the mean loss of one micro-batch over its targets, and
	// returns a function that loads a batch into g's inputs.
	Loss(g *layers.Graph) (loss *gorgonia.Node, load func(Batch) error, err error)
	// Save writes the model's checkpoint (config.json, model.safetensors)
	// into an existing directory, and Load reads it back into Store.
	Save(dir string) error
	Load(dir string) error
}

// Config sets a training run.
type Config struct {
	Steps      int         // optimizer steps in all
	Accumulate int         // micro-batches per step; 0 means 1
	ClipNorm   float64     // global gradient-norm clip; 0 turns it off
	EvalEvery  int         // evaluate every so many steps (and at the end); 0: only at the end
	SaveEvery  int         // checkpoint every so many steps; 0: only the best and the final one
	Dir        string      // run directory: metrics.jsonl, loss.png, checkpoints/
	Seed       uint64      // seeds dropout
	AdamW      AdamWConfig // the optimizer
	Schedule   Schedule    // the learning rate per step
	LogEvery   int         // plain log lines (when progress is not a terminal) every so many steps; 0: a twentieth of the run
	// Unit names a batch's target in the progress display's throughput:
	// "tok" (tokens, the default for ""), "img" for images.
	Unit string
	// CheckEvery is how often data-parallel ranks compare checksums of
	// their weights (dist.go); 0 means DefaultCheckEvery.
	CheckEvery int
	// LoadBestAtEnd loads the best checkpoint's weights (checkpoints/best:
	// lowest validation loss, or best by Scoring.BestBy) into the model
	// once the final checkpoint is written, so that what is scored or used
	// after Run is the best model, not the last (Hugging Face's
	// load_best_model_at_end). Result.Best says which was loaded.
	LoadBestAtEnd bool
	// BF16 runs the training graphs' matrix products with bfloat16
	// operands and float32 sums (ops.UseBF16), where the CPU has AVX-512
	// BF16; elsewhere the run stays float32 and Run prints a note. The
	// weights, the optimizer, the norms, softmax, the loss, the
	// evaluation graphs and the checkpoints stay float32.
	BF16 bool
	Scoring
}

// Scoring is what a run scores at every evaluation besides the validation
// loss, and what picks its best checkpoint.
type Scoring struct {
	// Scores, if set, is called at every evaluation after the validation
	// loss, with the weights as they stand: more validation numbers, such
	// as a word error rate from decoding held-out sources (Hugging Face's
	// compute_metrics with predict_with_generate). They go to
	// metrics.jsonl (val_scores) and the log line. Every data-parallel
	// rank calls it, and must get the same numbers: the weights are the
	// same. A cancelled ctx should stop it with an error.
	Scores func(ctx context.Context) (map[string]float64, error)
	// BestBy names the score that picks the best checkpoint instead of the
	// lowest validation loss (metric_for_best_model); the highest wins
	// with HigherIsBetter (greater_is_better), else the lowest.
	BestBy         string
	HigherIsBetter bool
}

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	switch {
	case c.Steps <= 0:
		return fmt.Errorf("train: steps %d must be positive", c.Steps)
	case c.Accumulate < 0 || c.EvalEvery < 0 || c.SaveEvery < 0:
		return fmt.Errorf("train: accumulate %d, eval_every %d and save_every %d must not be negative", c.Accumulate, c.EvalEvery, c.SaveEvery)
	case !(c.ClipNorm >= 0):
		return fmt.Errorf("train: clip norm %g must not be negative", c.ClipNorm)
	case c.Dir == "":
		return fmt.Errorf("train: no run directory")
	case c.Schedule == nil:
		return fmt.Errorf("train: no learning-rate schedule")
	case c.BestBy != "" && c.Scores == nil:
		return fmt.Errorf("train: best_by %q needs scores", c.BestBy)
	}
	return c.AdamW.Validate()
}

// ErrInterrupted is returned by Run when its context is cancelled (Ctrl-C):
// a checkpoint of the last finished step has been written, unless no step
// had been (the run is still at step 0 and nothing was trained).
// EvaluateContext's error wraps it too when its context is cancelled.
var ErrInterrupted = errors.New("train: interrupted")

// Trainer runs the training loop of one Task on one Data.
type Trainer struct {
	cfg   Config
	task  Task
	data  Data
	opt   *AdamW
	train *graphs
	eval  *graphs
	// summed accumulates a step's gradients, in the optimizer's order;
	// used marks the parameters that a graph of the step used.
	summed []*tensor.Dense
	used   []bool
	slot   map[*layers.Param]int // a parameter's index in summed and the optimizer
	mem    Memory                // estimated in New
	// dropoutCall counts training runs: every graph draws the dropout masks
	// of the run it is, so a resumed run redraws the same masks.
	dropoutCall uint64
	step        int      // optimizer steps done
	best        float64  // best validation loss so far
	bestScore   *float64 // best value of the score BestBy so far; nil before one
	hist        history
	// Data parallelism (dist.go): the time the last step spent in
	// collectives, and the buffers gradients are packed into.
	commTime       time.Duration
	buf32          []float32
	buf64          []float64
	lengthsChecked bool // the ranks agreed once on how many values a step sums
	// ov reduces the gradient in buckets during the last backward pass
	// (overlap.go), nil when it does not; overlapped says this step did.
	ov         *overlap
	overlapped bool
}

// compiled is a graph with its machine, loss and gradient reads.
type compiled struct {
	g      *layers.Graph
	vm     *layers.Machine
	load   func(Batch) error
	loss   gorgonia.Value
	grads  []gorgonia.Value
	nodes  gorgonia.Nodes
	params []*layers.Param // in the order of grads
	// slots are the optimizer's indexes of params, and dst their gradient
	// sums: set when the trainer first runs the graph.
	slots []int
	dst   []*tensor.Dense
	// reports are the graph's named scalars (layers.Graph.Report) and
	// their values after a run.
	reports []layers.Report
	rvals   []gorgonia.Value
	// tick calls back between the program's ops (a training graph under
	// data parallelism; overlap.go), and ticks is what the overlap knows
	// of this graph.
	tick  *ops.Tick
	ticks *ticks
}

// New builds the training and evaluation graphs and the optimizer. It
// first recovers the checkpoints of cfg.Dir from a kill (see Recover).
func New(task Task, data Data, cfg Config) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := LeaderFirst(func() error { return Recover(cfg.Dir) }); err != nil {
		return nil, err
	}
	if cfg.Accumulate == 0 {
		cfg.Accumulate = 1
	}
	if g, ok := data.(StepGrouper); ok {
		if err := g.GroupSteps(cfg.Accumulate * Ranks()); err != nil {
			return nil, fmt.Errorf("train: data: %w", err)
		}
	}
	t := &Trainer{cfg: cfg, task: task, data: data, best: math.Inf(1)}
	var err error
	if t.train, err = newGraphs(task, true, cfg.Seed, cfg.BF16 && ops.BF16Native()); err != nil {
		return nil, err
	}
	if t.eval, err = newGraphs(task, false, cfg.Seed, false); err != nil {
		return nil, err
	}
	// A ShapedTask's graphs may each use a part of the store (a head one
	// batch shape does not need): the optimizer holds all of it and skips,
	// each step, what no graph of the step used.
	params := task.Store().Params()
	if t.train.one != nil {
		params = t.train.one.params
	}
	if cfg.AdamW.Decay == nil {
		if d, ok := task.(Decayer); ok {
			cfg.AdamW.Decay = d.Decay
		}
	}
	if t.opt, err = NewAdamW(params, cfg.AdamW); err != nil {
		return nil, err
	}
	t.slot = make(map[*layers.Param]int, len(params))
	for i, p := range params {
		t.summed = append(t.summed, tensor.New(tensor.WithShape(p.Value.Shape().Clone()...), tensor.Of(p.Value.Dtype())))
		t.slot[p] = i
	}
	t.used = make([]bool, len(params))
	t.ov = newOverlap(t.summed)
	if err := t.compileAhead(); err != nil {
		t.Close()
		return nil, err
	}
	t.mem = t.estimate()
	if err := t.checkMemory(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// lossFunc builds a task's loss on a graph (Task.Loss or ShapedTask.LossFor).
type lossFunc func(g *layers.Graph) (*gorgonia.Node, func(Batch) error, error)

func compile(s *layers.Store, training bool, seed uint64, bf16 bool, build lossFunc) (*compiled, error) {
	var opts []layers.GraphOption
	if training {
		opts = append(opts, layers.Training(), layers.DropoutSeed(seed))
	}
	g := s.NewGraph(opts...)
	loss, load, err := build(g)
	if err != nil {
		return nil, fmt.Errorf("train: building the loss: %w", err)
	}
	if !loss.IsScalar() {
		return nil, fmt.Errorf("train: the loss has shape %v, want a scalar", loss.Shape())
	}
	c := &compiled{g: g, load: load, params: g.Params(), reports: g.Reports()}
	gorgonia.Read(loss, &c.loss)
	c.rvals = make([]gorgonia.Value, len(c.reports))
	for i, r := range c.reports {
		gorgonia.Read(r.Node, &c.rvals[i])
	}
	if training {
		if c.nodes, err = gorgonia.Grad(loss, g.Learnables()...); err != nil {
			return nil, fmt.Errorf("train: gradients: %w", err)
		}
		c.grads = make([]gorgonia.Value, len(c.nodes))
		for i, n := range c.nodes {
			gorgonia.Read(n, &c.grads[i])
		}
	}
	if bf16 {
		ops.UseBF16(g.ExprGraph)
	}
	// The engine adds the gradients into its sums right after each run,
	// before any other graph of the store runs: they may share the pool.
	mopts := []layers.MachineOption{layers.SharedOutputs()}
	if training && overlapping() {
		c.tick = new(ops.Tick)
		mopts = append(mopts, layers.Ticking(c.tick))
	}
	if c.vm, err = g.Machine(mopts...); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	return c, nil
}

// run loads a batch, runs the graph and returns the batch's mean loss.
func (c *compiled) run(b Batch) (float64, error) {
	if err := c.load(b); err != nil {
		return 0, err
	}
	c.loss = nil
	err := c.vm.RunAll()
	c.vm.Reset()
	if err != nil {
		return 0, err
	}
	return scalarValue(c.loss)
}

// addReports adds the last run's reported scalars, times w, into sums.
func (c *compiled) addReports(sums map[string]float64, w float64) error {
	for i, r := range c.reports {
		v, err := scalarValue(c.rvals[i])
		if err != nil {
			return fmt.Errorf("report %s: %w", r.Name, err)
		}
		sums[r.Name] += v * w
	}
	return nil
}

// meanReports divides sums by total, giving nil for no reports.
func meanReports(sums map[string]float64, total int) map[string]float64 {
	if len(sums) == 0 {
		return nil
	}
	for k := range sums {
		sums[k] /= float64(total)
	}
	return sums
}

// Close frees the machines.
func (t *Trainer) Close() {
	t.train.close()
	t.eval.close()
}

// Step is the number of optimizer steps done.
func (t *Trainer) Step() int { return t.step }

// Result is how a run ended.
type Result struct {
	Steps    int
	Loss     float64 // the last step's training loss
	ValLoss  float64 // the last evaluation's loss (with LoadBestAtEnd: the loaded model's)
	BestLoss float64 // the best evaluation's loss
	Final    string  // the final checkpoint's directory
	// ValParts are the last evaluation's reported scalars
	// (layers.Graph.Report), such as BERT's mlm_accuracy; nil without any.
	// With LoadBestAtEnd they, ValLoss and ValScores are the loaded
	// model's, evaluated again.
	ValParts map[string]float64
	// ValScores are the last evaluation's Scoring.Scores; nil without.
	ValScores map[string]float64
	// Best is the checkpoint whose weights the model holds after Run with
	// LoadBestAtEnd (checkpoints/best), BestStep its step; "" and 0
	// otherwise: the model holds the last step's weights.
	Best     string
	BestStep int
}

// Run trains until cfg.Steps, evaluating, logging and checkpointing, and
// writes the final checkpoint. progress, if not nil, shows a progress bar
// when it is a terminal and plain log lines otherwise.
// A NaN or Inf loss stops the run with an error naming the step, keeping the
// last good checkpoint; a cancelled ctx (checked between steps and between
// evaluation batches) saves a checkpoint of the last step and returns
// ErrInterrupted. Cancelled at step 0, it saves nothing.
func (t *Trainer) Run(ctx context.Context, progress io.Writer) (Result, error) {
	if err := t.shareState(); err != nil {
		return Result{}, err
	}
	var m *metrics
	err := LeaderFirst(func() (err error) { m, err = openMetrics(t.cfg.Dir); return err })
	if err != nil {
		return Result{}, err
	}
	if m != nil {
		defer m.Close()
	}
	if !Leader() {
		progress = nil
	}
	if progress != nil {
		fmt.Fprintln(progress, t.mem)
		switch {
		case t.cfg.BF16 && !ops.BF16Native():
			fmt.Fprintln(progress, bf16Note)
		case t.cfg.BF16 && bf16Slow():
			fmt.Fprintln(progress, bf16SlowNote)
		}
	}
	bar := newProgress(progress, t.cfg.Steps, t.step, t.cfg.LogEvery, t.cfg.Unit)
	var res Result
	for t.step < t.cfg.Steps {
		// Data-parallel ranks finish the step they are in together and
		// then stop together (reduceStep tells them whether any was asked).
		if ctx.Err() != nil && Ranks() == 1 {
			return res, t.interrupt()
		}
		rec, stop, err := t.trainStep(ctx)
		if err != nil {
			return res, err
		}
		res.Loss = rec.Loss
		last := t.step == t.cfg.Steps
		var stopped bool // interrupted during the evaluation
		if last || (t.cfg.EvalEvery > 0 && t.step%t.cfg.EvalEvery == 0) {
			if err := t.evaluate(ctx, &rec, &res); errors.Is(err, ErrInterrupted) {
				stopped = true // the step is trained: record it and save it
			} else if err != nil {
				return res, err
			}
		}
		if m != nil {
			if err := m.write(rec); err != nil {
				return res, err
			}
		}
		if stopped || stop {
			return res, t.interrupt()
		}
		if every := cmp.Or(t.cfg.CheckEvery, DefaultCheckEvery); t.step%every == 0 {
			if err := t.checkSame(); err != nil {
				return res, err
			}
		}
		t.hist.add(rec)
		if rec.ValLoss != nil && Leader() {
			if err := t.hist.plot(t.cfg.Dir); err != nil {
				return res, err
			}
		}
		if !last && t.cfg.SaveEvery > 0 && t.step%t.cfg.SaveEvery == 0 {
			if _, err := t.checkpoint(fmt.Sprintf("step-%06d", t.step)); err != nil {
				return res, err
			}
		}
		bar.update(rec)
	}
	bar.finish()
	res.Steps, res.BestLoss = t.step, t.best
	if res.Final, err = t.checkpoint("final"); err != nil || !t.cfg.LoadBestAtEnd {
		return res, err
	}
	return res, t.loadBest(ctx, &res, progress)
}

// loadBest loads checkpoints/best into the model (Config.LoadBestAtEnd)
// and says so on progress. The result's validation loss, parts and scores
// become the loaded model's: it is evaluated again on the same batches
// (nothing is recorded or saved). Without a best checkpoint (no evaluation
// gave a number that could be best) the model keeps the last step's
// weights, which is said too.
func (t *Trainer) loadBest(ctx context.Context, res *Result, progress io.Writer) error {
	say := func(format string, a ...any) {
		if progress != nil {
			fmt.Fprintf(progress, format, a...)
		}
	}
	best := filepath.Join(t.cfg.Dir, CheckpointsDir, "best")
	st, err := readState(best)
	if errors.Is(err, fs.ErrNotExist) {
		say("load_best_model_at_end: no best checkpoint in %s; the model keeps the last step's weights\n", filepath.Dir(best))
		return nil
	}
	if err != nil {
		return fmt.Errorf("train: load_best_model_at_end: %w", err)
	}
	if err := t.task.Load(best); err != nil {
		return fmt.Errorf("train: load_best_model_at_end: %s: %w", best, err)
	}
	res.Best, res.BestStep = best, st.Step
	if res.ValLoss, res.ValParts, err = t.validate(ctx); err != nil {
		return fmt.Errorf("train: load_best_model_at_end: %s: %w", best, err)
	}
	if t.cfg.Scores != nil {
		if res.ValScores, err = t.cfg.Scores(ctx); err != nil {
			return fmt.Errorf("train: load_best_model_at_end: scores of %s: %w", best, err)
		}
	}
	by, v := "val loss", st.BestValLoss
	if t.cfg.BestBy != "" {
		by, v = t.cfg.BestBy, st.BestScore
	}
	at := ""
	if v != nil {
		at = fmt.Sprintf(", %s %.4g", by, *v)
	}
	say("load_best_model_at_end: the model now holds %s (step %d of %d%s; val loss %.4f)\n", best, st.Step, t.step, at, res.ValLoss)
	return nil
}

// interrupt saves a checkpoint of the last finished step, if any step has
// been trained, and returns ErrInterrupted.
func (t *Trainer) interrupt() error {
	if t.step == 0 {
		return ErrInterrupted // nothing trained: a checkpoint would hold the initial weights
	}
	if _, err := t.checkpoint(fmt.Sprintf("step-%06d", t.step)); err != nil {
		return err
	}
	return ErrInterrupted
}

// trainStep runs one optimizer step over cfg.Accumulate micro-batches (on
// each rank). With several ranks, a cancelled ctx does not stop the step:
// the result says whether any rank's ctx was cancelled by its end.
func (t *Trainer) trainStep(ctx context.Context) (rec record, stopAll bool, err error) {
	began := time.Now()
	t.commTime = 0
	loss, total, parts, stopAll, err := t.accumulate(ctx)
	if err != nil {
		return record{}, false, fmt.Errorf("train: step %d: %w", t.step+1, err)
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return record{}, false, fmt.Errorf("train: step %d: the loss is %v; stopping, the last good checkpoint is kept under %s", t.step+1, loss, t.cfg.Dir)
	}
	grads := make([]gorgonia.Value, len(t.summed))
	for i, s := range t.summed {
		if t.used[i] { // an unused parameter's gradient is nil: torch's p.grad None
			grads[i] = s
		}
	}
	norm := math.NaN()
	if t.cfg.ClipNorm > 0 {
		if norm, err = ClipGradNorm(grads, t.cfg.ClipNorm); err != nil {
			return record{}, false, fmt.Errorf("train: step %d: %w", t.step+1, err)
		}
	}
	lr := t.cfg.Schedule.LR(t.step)
	if err := t.opt.Step(grads, lr); err != nil {
		return record{}, false, fmt.Errorf("train: step %d: %w", t.step+1, err)
	}
	t.step++
	secs := time.Since(began).Seconds()
	rec = record{Step: t.step, Loss: loss, Parts: parts, LR: lr, Targets: total, Seconds: secs, TargetsPerSec: float64(total) / secs}
	if !math.IsNaN(norm) {
		rec.GradNorm = &norm
	}
	if Ranks() > 1 {
		c := t.commTime.Seconds()
		rec.CommSeconds = &c
	}
	return rec, stopAll, nil
}

// accumulate runs cfg.Accumulate micro-batches (on each rank: with
// several, the step has Ranks()·Accumulate of them and this rank runs
// every Ranks()-th, dist.go) and leaves in t.summed the gradient of the
// step's loss: the mean over all their target tokens, not a mean of the
// micro-batches' means. It returns that loss, the number of targets and
// the means of the graph's reports, weighted alike, and whether any rank's
// ctx was cancelled by the end of the micro-batches.
func (t *Trainer) accumulate(ctx context.Context) (loss float64, total int, parts map[string]float64, stopAll bool, err error) {
	for i, s := range t.summed {
		s.Zero()
		t.used[i] = false
	}
	var lossSum float64
	sums := map[string]float64{}
	ranks, rank := Ranks(), Rank()
	last := (t.cfg.Accumulate-1)*ranks + rank // this rank's last micro-batch
	t.overlapped = false
	for i := 0; i < t.cfg.Accumulate*ranks; i++ {
		if i%ranks != rank {
			if err := t.skipBatch(); err != nil {
				return 0, 0, nil, false, fmt.Errorf("data: %w", err)
			}
			continue
		}
		b, err := t.data.Next()
		if err != nil {
			return 0, 0, nil, false, fmt.Errorf("data: %w", err)
		}
		c, err := t.train.get(b)
		if err != nil {
			return 0, 0, nil, false, err
		}
		if err := t.bind(c); err != nil {
			return 0, 0, nil, false, err
		}
		// Micro-batch i of the step draws the dropout masks of run
		// dropoutCall+i, whichever rank runs it.
		c.g.SetDropoutCall(t.dropoutCall + uint64(i))
		bucketed := i == last && t.ov != nil && c.tick != nil
		var l float64
		if bucketed {
			l, err = t.ov.run(c, b)
			t.overlapped = true
		} else {
			l, err = c.run(b)
		}
		if err != nil {
			return 0, 0, nil, false, err
		}
		n := b.Targets()
		lossSum += l * float64(n)
		if err := c.addReports(sums, float64(n)); err != nil {
			return 0, 0, nil, false, err
		}
		total += n
		// Each micro-batch's gradient is of its mean loss: weighting it by its
		// target count makes the sum the gradient of the summed loss (the
		// overlap has added it into its buckets).
		if !bucketed {
			if err := addScaled(c.dst, c.grads, float64(n)); err != nil {
				return 0, 0, nil, false, err
			}
		}
		for _, i := range c.slots {
			t.used[i] = true
		}
	}
	t.dropoutCall += uint64(t.cfg.Accumulate * ranks)
	if stopAll, err = t.reduceStep(&lossSum, &total, sums, ctx.Err() != nil); err != nil {
		return 0, 0, nil, false, err
	}
	if total == 0 {
		return 0, 0, nil, false, fmt.Errorf("the micro-batches hold no targets")
	}
	for _, s := range t.summed {
		scaleDense(s, 1/float64(total))
	}
	return lossSum / float64(total), total, meanReports(sums, total), stopAll, nil
}

// bind finds, once per graph, the optimizer's slots of the parameters c
// uses. A parameter the optimizer does not hold is an error.
func (t *Trainer) bind(c *compiled) error {
	if c.slots != nil || len(c.params) == 0 {
		return nil
	}
	slots := make([]int, len(c.params))
	dst := make([]*tensor.Dense, len(c.params))
	for k, p := range c.params {
		i, ok := t.slot[p]
		if !ok {
			return fmt.Errorf("a graph uses parameter %s, which the optimizer does not hold (it is not in the task's store)", p.Name)
		}
		slots[k], dst[k] = i, t.summed[i]
	}
	c.slots, c.dst = slots, dst
	return nil
}

// validate is the mean loss and reported parts of the validation
// batches, shared among data-parallel ranks.
func (t *Trainer) validate(ctx context.Context) (float64, map[string]float64, error) {
	batches, err := t.data.Eval()
	if err != nil {
		return 0, nil, fmt.Errorf("validation batches: %w", err)
	}
	return t.shardedLoss(ctx, batches)
}

// evaluate runs the validation batches, records their mean loss (weighted by
// targets) and saves the best checkpoint. A cancelled ctx stops it between
// batches with an error wrapping ErrInterrupted, recording nothing.
func (t *Trainer) evaluate(ctx context.Context, rec *record, res *Result) error {
	val, parts, err := t.validate(ctx)
	if err != nil {
		return fmt.Errorf("train: evaluation at step %d: %w", t.step, err)
	}
	rec.ValLoss, rec.ValParts = &val, parts
	res.ValLoss, res.ValParts = val, parts
	improved := val < t.best
	if improved {
		t.best = val
	}
	if t.cfg.Scores != nil {
		scores, err := t.cfg.Scores(ctx)
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%w: scoring stopped: %w", ErrInterrupted, context.Cause(ctx))
		}
		if err != nil {
			return fmt.Errorf("train: scores at step %d: %w", t.step, err)
		}
		rec.ValScores, res.ValScores = scores, scores
		if by := t.cfg.BestBy; by != "" {
			v, ok := scores[by]
			if !ok {
				return fmt.Errorf("train: best_by %q is not one of the scores:%s", by, partsText(scores))
			}
			improved = !math.IsNaN(v) && (t.bestScore == nil || (t.cfg.HigherIsBetter && v > *t.bestScore) || (!t.cfg.HigherIsBetter && v < *t.bestScore))
			if improved {
				t.bestScore = &v
			}
		}
	}
	if improved {
		if _, err := t.checkpoint("best"); err != nil {
			return err
		}
	}
	return nil
}

// meanLoss is the loss over all the batches' targets. ctx is checked before
// each batch: a cancelled one stops it with an error wrapping both
// ErrInterrupted and the context's cause.
func meanLoss(ctx context.Context, gs *graphs, batches []Batch) (loss float64, targets int, parts map[string]float64, err error) {
	sum, targets, sums, err := lossSums(ctx, gs, batches)
	if err != nil {
		return 0, 0, nil, err
	}
	if targets == 0 {
		return 0, 0, nil, fmt.Errorf("the batches hold no targets")
	}
	return sum / float64(targets), targets, meanReports(sums, targets), nil
}

// lossSums is meanLoss before the division: the target-weighted sums of
// the loss and of the reports, and the targets.
func lossSums(ctx context.Context, gs *graphs, batches []Batch) (sum float64, targets int, sums map[string]float64, err error) {
	sums = map[string]float64{}
	for i, b := range batches {
		if ctx.Err() != nil {
			return 0, 0, nil, fmt.Errorf("%w: evaluation stopped after %d of %d batches: %w", ErrInterrupted, i, len(batches), context.Cause(ctx))
		}
		c, err := gs.get(b)
		if err != nil {
			return 0, 0, nil, err
		}
		l, err := c.run(b)
		if err != nil {
			return 0, 0, nil, err
		}
		sum += l * float64(b.Targets())
		if err := c.addReports(sums, float64(b.Targets())); err != nil {
			return 0, 0, nil, err
		}
		targets += b.Targets()
	}
	return sum, targets, sums, nil
}

// Evaluate is the mean loss of task over the batches' targets, in an
// evaluation graph (dropout off): what `zoo eval` reports.
func Evaluate(task Task, batches []Batch) (loss float64, targets int, err error) {
	return EvaluateContext(context.Background(), task, batches)
}

// EvaluateContext is Evaluate stopped by ctx: it checks ctx before each
// batch, and once ctx is cancelled returns an error that wraps
// ErrInterrupted and the context's cause (context.Canceled on Ctrl-C).
func EvaluateContext(ctx context.Context, task Task, batches []Batch) (loss float64, targets int, err error) {
	loss, targets, _, err = EvaluateReports(ctx, task, batches)
	return loss, targets, err
}

// EvaluateReports is EvaluateContext that also returns the means of the
// scalars the task's graph reports (layers.Graph.Report), weighted by the
// batches' targets: BERT's MLM and NSP losses and accuracies.
func EvaluateReports(ctx context.Context, task Task, batches []Batch) (loss float64, targets int, reports map[string]float64, err error) {
	gs, err := newGraphs(task, false, 0, false)
	if err != nil {
		return 0, 0, nil, err
	}
	defer gs.close()
	loss, targets, reports, err = meanLoss(ctx, gs, batches)
	if errors.Is(err, ErrInterrupted) {
		return 0, 0, nil, err // already says "train: interrupted"
	}
	if err != nil {
		return 0, 0, nil, fmt.Errorf("train: evaluate: %w", err)
	}
	return loss, targets, reports, nil
}

func scalarValue(v gorgonia.Value) (float64, error) {
	switch s := v.(type) {
	case *gorgonia.F32:
		return float64(*s), nil
	case *gorgonia.F64:
		return float64(*s), nil
	}
	return 0, fmt.Errorf("train: the loss is %T, want a float scalar", v)
}

// bf16Note is Run's line when Config.BF16 asks for bfloat16 products on
// a CPU without AVX-512 BF16.
const bf16Note = "bf16: this CPU has no AVX-512 BF16; training in float32"

// bf16SlowNote is Run's line when Config.BF16 asks for bfloat16 products
// on a CPU that runs them no faster than float32 (ops.BF16Slow): the run
// stays bf16, as asked.
const bf16SlowNote = "bf16: on this CPU (Intel, with AMX) zoo's bf16 products run no faster than float32's (measured 0.67–0.79× on a Xeon); training in bf16 as asked, float32 would be faster"

// bf16Slow is ops.BF16Slow; tests replace it.
var bf16Slow = ops.BF16Slow

package serve

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
)

// decoder is one generation model's continuous batching: one goroutine
// (loop) owns a layers.CausalBatch of MaxRunning rows; a request's
// sequences join it between decoding steps (their prompts prefilled into
// free rows), step together with every other running sequence, one
// token per step, and leave when their decoding ends, freeing their rows.
//
// The sequences are decoded by the family's own Generate (decode.Sample:
// each request's sampling settings, seed, repetition penalty, stop
// strings and streaming), whose stepper (seqStepper, made through
// models.TextGenerationConfig.Stepper) sends each row's last token to the
// loop and waits for its logits. A step runs once every running row has
// sent its token, or BatchWait after the first did (a row whose client
// reads slowly does not hold up the others: it skips that step).
type decoder struct {
	model    string
	rows     int
	capacity int
	wait     time.Duration
	maxQueue int
	met      *metrics
	msgs     chan decMsg   // from the sequences, in their order
	waiting  *atomic.Int64 // the model's queue count
	// acquire takes one of the model's MaxConcurrent slots, for a
	// decoding that does not fit a row.
	acquire func(ctx context.Context) (release func(), err error)
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once

	// The loop's own.
	batch   *layers.CausalBatch
	owner   []*seqRow   // the sequence holding each row
	pending []*seqRow   // by row: the sequence whose token waits for the next step
	queue   [][]*seqRow // joins waiting for free rows: a decoding's rows join together
	tokens  int         // tokens produced in the current second
	second  time.Time
}

// seqRow is one sequence (one prompt's row of a decoding) in the batch.
type seqRow struct {
	ctx    context.Context
	lm     *layers.CausalLM
	prompt []int
	maxNew int
	row    int       // its row, once joined
	token  int       // the token to step
	logits []float64 // its logits, written by the loop before it answers
	done   chan error
}

type decMsg struct {
	kind  int // msgJoin, msgStep, msgLeave
	s     *seqRow
	group []*seqRow // msgJoin: every row of a decoding
}

const (
	msgJoin = iota
	msgStep
	msgLeave
)

func newDecoder(model string, cfg *Config, met *metrics, waiting *atomic.Int64) *decoder {
	d := &decoder{model: model, waiting: waiting, rows: cfg.MaxRunning, capacity: max(cfg.MaxCacheTokens/cfg.MaxRunning, 1), wait: cfg.BatchWait,
		maxQueue: cfg.MaxQueue, met: met, msgs: make(chan decMsg, cfg.MaxRunning), stop: make(chan struct{}), stopped: make(chan struct{})}
	go d.loop()
	return d
}

// close stops the loop: sequences waiting or running get errClosed.
func (d *decoder) close() {
	d.once.Do(func() { close(d.stop) })
	<-d.stopped
}

// stepper is the models.TextGenerationConfig.Stepper of one request: its
// decoding's rows join the batch; ctx is the request's.
func (d *decoder) stepper(ctx context.Context) layers.NewStepperFunc {
	return func(lm *layers.CausalLM, o layers.CausalOptions) (decode.Stepper, error) {
		if o.NoCache {
			return nil, fmt.Errorf("model %s: continuous batching decodes through the KV cache", d.model)
		}
		return &seqStepper{d: d, ctx: ctx, lm: lm, o: o}, nil
	}
}

// send hands the loop a message, unless ctx is done or the loop stopped.
func (d *decoder) send(ctx context.Context, m decMsg) error {
	select {
	case d.msgs <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-d.stop:
		return errClosed
	}
}

// await waits for the loop's answer to s.
func (d *decoder) await(s *seqRow) error {
	select {
	case err := <-s.done:
		return err
	case <-s.ctx.Done():
		return s.ctx.Err()
	case <-d.stopped:
		return errClosed
	}
}

// seqStepper is a decode.Stepper whose rows are sequences of the running
// batch. A decoding that does not fit a row (longer than the rows' slots
// or the model's context: the sliding window) is decoded by a
// CausalStepper of its own instead, in one of the model's MaxConcurrent
// slots, as without continuous batching.
type seqStepper struct {
	d        *decoder
	ctx      context.Context
	lm       *layers.CausalLM
	o        layers.CausalOptions
	seqs     []*seqRow
	out      [][]float64
	fallback *layers.CausalStepper
	release  func() // the fallback's slot
	joined   bool
}

func (st *seqStepper) Step(rows [][]int) ([][]float64, error) {
	if st.fallback != nil {
		return st.fallback.Step(rows)
	}
	if !st.joined {
		st.joined = true
		return st.join(rows)
	}
	if len(rows) != len(st.seqs) {
		return nil, fmt.Errorf("model %s: a step of %d rows, the decoding has %d", st.d.model, len(rows), len(st.seqs))
	}
	for i, s := range st.seqs {
		s.token = rows[i][len(rows[i])-1]
		if err := st.d.send(st.ctx, decMsg{kind: msgStep, s: s}); err != nil {
			return nil, err
		}
	}
	for i, s := range st.seqs {
		if err := st.d.await(s); err != nil {
			return nil, err
		}
		st.out[i] = s.logits
	}
	return st.out, nil
}

// join asks a row for every prompt, or falls back to a stepper of its
// own when one does not fit a row.
func (st *seqStepper) join(rows [][]int) ([][]float64, error) {
	for _, p := range rows {
		// A decoding's rows join together: one of more rows than the
		// batch has could never start.
		if len(rows) > st.d.rows || !st.d.fits(len(p), st.o.MaxNewTokens, st.lm) {
			release, err := st.d.acquire(st.ctx)
			if err != nil {
				return nil, err
			}
			cs, err := st.lm.NewStepper(st.o)
			if err != nil {
				release()
				return nil, err
			}
			st.fallback, st.release = cs, release
			return cs.Step(rows)
		}
	}
	n := st.d.waiting.Add(int64(len(rows)))
	if n > int64(st.d.maxQueue) {
		st.d.waiting.Add(-int64(len(rows)))
		return nil, queueFull(st.d.model, st.d.maxQueue)
	}
	st.d.met.queue.WithLabelValues(st.d.model).Add(float64(len(rows)))
	st.out = make([][]float64, len(rows))
	group := make([]*seqRow, len(rows))
	for i, p := range rows {
		group[i] = &seqRow{ctx: st.ctx, lm: st.lm, prompt: p, maxNew: st.o.MaxNewTokens, row: -1, done: make(chan error, 1)}
	}
	err := st.d.send(st.ctx, decMsg{kind: msgJoin, group: group})
	if err != nil {
		st.d.unqueue(len(rows)) // the loop never saw them
		return nil, err
	}
	st.seqs = group
	for i, s := range st.seqs {
		if err == nil {
			err = st.d.await(s)
		}
		if err == nil {
			st.out[i] = s.logits
		}
	}
	return st.out, err
}

// Reorder is beam search's, which never runs in the batch.
func (st *seqStepper) Reorder(parents []int) error {
	if st.fallback != nil {
		return st.fallback.Reorder(parents)
	}
	for r, p := range parents {
		if r != p {
			return fmt.Errorf("model %s: a running batch's rows cannot be reordered (beam search runs on its own)", st.d.model)
		}
	}
	return nil
}

// Close leaves the batch (decode's Generate calls it when it ends).
func (st *seqStepper) Close() {
	if st.fallback != nil {
		st.fallback.Close()
		st.release()
		return
	}
	for _, s := range st.seqs {
		_ = st.d.send(context.Background(), decMsg{kind: msgLeave, s: s})
	}
}

// fits reports whether a sequence fits a row of the batch (the loop's
// batch is made on first use, so this asks the same rule of lm).
func (d *decoder) fits(p, maxNew int, lm *layers.CausalLM) bool {
	return p >= 1 && maxNew >= 1 && p <= lm.Context && maxNew-1 <= lm.Context-p && layers.RoundUp(p, 16)+maxNew-1 <= d.capacity
}

func (d *decoder) loop() {
	defer close(d.stopped)
	defer func() {
		if d.batch != nil {
			d.batch.Close()
		}
	}()
	d.owner, d.pending = make([]*seqRow, d.rows), make([]*seqRow, d.rows)
	d.second = time.Now()
	var timer *time.Timer
	var fire <-chan time.Time
	due := false
	for {
		d.admit()
		live, waiting := 0, 0
		for r, s := range d.owner {
			if s != nil {
				live++
				if d.pending[r] != nil {
					waiting++
				}
			}
		}
		d.met.running.WithLabelValues(d.model).Set(float64(live))
		if waiting > 0 && (waiting == live || due) {
			if timer != nil {
				timer.Stop()
				timer, fire = nil, nil
			}
			due = false
			d.step()
			continue
		}
		select {
		case m := <-d.msgs:
			switch m.kind {
			case msgJoin:
				d.queue = append(d.queue, m.group)
			case msgStep:
				if m.s.row < 0 || d.owner[m.s.row] != m.s {
					m.s.done <- fmt.Errorf("model %s: a step of a sequence not in the batch", d.model)
					continue
				}
				d.pending[m.s.row] = m.s
				if timer == nil && d.wait > 0 {
					timer = time.NewTimer(d.wait)
					fire = timer.C
				} else if d.wait <= 0 {
					due = true
				}
			case msgLeave:
				d.leave(m.s)
			}
		case <-fire:
			timer, fire, due = nil, nil, true
		case <-d.stop:
			d.drain()
			return
		}
	}
}

// admit joins the queued decodings, in order, each once rows are free
// for all its sequences, and drops those whose request is gone.
func (d *decoder) admit() {
	for len(d.queue) > 0 {
		group := d.queue[0]
		if err := group[0].ctx.Err(); err != nil { // one request's rows: one context
			d.queue = d.queue[1:]
			d.unqueue(len(group))
			for _, s := range group {
				s.done <- err
			}
			continue
		}
		if d.batch == nil {
			b, err := group[0].lm.NewBatch(d.rows, d.capacity)
			if err != nil {
				d.queue = d.queue[1:]
				d.unqueue(len(group))
				for _, s := range group {
					s.done <- fmt.Errorf("model %s: continuous batching: %w", d.model, err)
				}
				continue
			}
			d.batch = b
		}
		if d.batch.Free() < len(group) {
			return
		}
		d.queue = d.queue[1:]
		d.unqueue(len(group))
		for _, s := range group {
			d.join(s)
		}
	}
}

// join prefills s into a free row and answers it.
func (d *decoder) join(s *seqRow) {
	var row int
	var logits []float64
	err := d.safely("a prefill", func() (err error) {
		row, logits, err = d.batch.Join(s.prompt, s.maxNew)
		return err
	})
	if err != nil {
		s.done <- err
		return
	}
	s.row, s.logits = row, logits
	d.owner[row] = s
	d.count(1)
	s.done <- nil
}

// safely runs f, a panic in the model becoming an error (the loop must
// not die: the process would).
func (d *decoder) safely(what string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &apiError{Status: 500, Type: typeServer, Message: fmt.Sprintf("internal error: model %s failed in %s: %v", d.model, what, p)}
		}
	}()
	return f()
}

// unqueue takes n joins off the model's queue count (safe from any
// goroutine).
func (d *decoder) unqueue(n int) {
	d.waiting.Add(-int64(n))
	d.met.queue.WithLabelValues(d.model).Sub(float64(n))
}

// step runs the pending rows' tokens as one pass and answers each.
func (d *decoder) step() {
	tokens := make([]int, d.rows)
	n := 0
	for r := range tokens {
		tokens[r] = -1
		if s := d.pending[r]; s != nil {
			tokens[r] = s.token
			n++
		}
	}
	d.met.batch.WithLabelValues(d.model).Observe(float64(n))
	var out [][]float64
	err := d.safely("a decoding step", func() (err error) {
		out, err = d.batch.Step(tokens)
		return err
	})
	if err != nil {
		// The batch is broken: every running sequence fails; a new
		// batch is made for the next join.
		for r, s := range d.owner {
			if s != nil {
				if d.pending[r] == nil {
					s.row = -1
				}
				d.owner[r] = nil
			}
		}
		for r, s := range d.pending {
			if s != nil {
				s.done <- err
				d.pending[r] = nil
			}
		}
		d.batch.Close()
		d.batch = nil
		return
	}
	for r, s := range d.pending {
		if s == nil {
			continue
		}
		d.pending[r] = nil
		s.logits = append(s.logits[:0], out[r]...)
		s.done <- nil
	}
	d.count(n)
}

// count adds n tokens to the tokens-per-second gauge, which shows the
// last whole second's.
func (d *decoder) count(n int) {
	now := time.Now()
	if el := now.Sub(d.second); el >= time.Second {
		d.met.tokensPerSec.WithLabelValues(d.model).Set(float64(d.tokens) / el.Seconds())
		d.tokens, d.second = 0, now
	}
	d.tokens += n
}

// leave frees s's row (or drops its decoding from the queue).
func (d *decoder) leave(s *seqRow) {
	if i := slices.IndexFunc(d.queue, func(g []*seqRow) bool { return slices.Contains(g, s) }); i >= 0 {
		d.unqueue(len(d.queue[i]))
		d.queue = slices.Delete(d.queue, i, i+1)
		return
	}
	if s.row < 0 || d.owner[s.row] != s {
		return
	}
	if d.pending[s.row] == s {
		d.pending[s.row] = nil
	}
	d.owner[s.row] = nil
	if d.batch != nil {
		d.batch.Leave(s.row)
	}
	s.row = -1
}

// drain answers every sequence at close.
func (d *decoder) drain() {
	for _, g := range d.queue {
		for _, s := range g {
			s.done <- errClosed
		}
		d.unqueue(len(g))
	}
	d.queue = nil
	for r, s := range d.pending {
		if s != nil {
			s.done <- errClosed
			d.pending[r] = nil
		}
	}
}

package seq2seq

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
)

// stepper is one decoding call's compiled decoder over R = B·K rows (K
// beams per source), for package decode: Step maps each row's prefix, bos
// and the tokens so far, all of one length, to the next token's logits
// (R, V).
type stepper interface {
	decode.Stepper
	close()
}

// cachedStep is a compiled decoder step of one token per row, for R rows
// reading sources of Ts′ positions: its keys and values are written into
// per-layer self-attention caches of capacity C, and it reads the
// encoder's projected cross-attention keys and values, which each call
// copies into its cross tensors. A model keeps it between calls.
type cachedStep struct {
	*graphRun
	key       stepKey
	ids, slot []int         // (R, 1) and (1)
	mask      *tensor.Dense // (R, C): slots holding tokens
	maskData  any           // its []float32 or []float64
	pos       *layers.PositionInput
	caches    *layers.KVCaches // per layer self-attention K and V, (R·h, C, d_head)
	cross     []*tensor.Dense  // per layer K and V, (R·h, Ts′, d_head)
	memMask   *tensor.Dense    // (R, Ts′), 1 for source tokens
	bytes     int64            // the estimate the model's cache is told
	filled    int              // slots the steps of this call have written
}

func (m *Model) newCachedStep(k stepKey) (*cachedStep, error) {
	g := m.Store.NewGraph()
	ids, slot := g.IntInput("decoder_input_ids", k.rows, 1), g.IntInput("slot", 1)
	s := &cachedStep{key: k, ids: layers.Ints(ids), slot: layers.Ints(slot)}
	x, err := m.TgtEmbed.ForwardScaled(g, ids, m.embedScale())
	if err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	s.pos = m.Pos.Input(g, 1)
	if x, err = m.Pos.ForwardInput(g, x, s.pos); err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	mask := g.Input("cache_mask", k.rows, k.capacity)
	s.mask = mask.Value().(*tensor.Dense)
	s.maskData = s.mask.Data()
	memMask := g.Input("encoder_attention_mask", k.rows, k.ts)
	s.memMask = memMask.Value().(*tensor.Dense)
	dt := m.Store.Dtype()
	self := make([]*layers.MultiHeadAttention, len(m.Decoder.Layers))
	for i, l := range m.Decoder.Layers {
		self[i] = l.SelfAttn
	}
	s.caches = layers.NewKVCaches(self, k.rows, k.capacity, dt)
	st := layers.DecoderState{Mask: mask, MemMask: memMask, Self: s.caches.Bind(g, slot, nil)}
	for _, l := range m.Decoder.Layers {
		cross := l.CrossAttn.CacheShape(k.rows, k.ts)
		kx, vx := tensor.New(tensor.WithShape(cross...), tensor.Of(dt)), tensor.New(tensor.WithShape(cross...), tensor.Of(dt))
		s.cross = append(s.cross, kx, vx)
		st.Cross = append(st.Cross, layers.CrossKV{K: g.Bind("cross_key", kx), V: g.Bind("cross_value", vx)})
	}
	h, err := m.Decoder.ForwardCached(g, x, st)
	if err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	logits, err := m.Head(g, h)
	if err != nil {
		return nil, err
	}
	if s.graphRun, err = newGraphRun(g, logits, k.rows); err != nil {
		return nil, err
	}
	s.bytes = m.Config.DecodeBytes(k.rows, 1, k.ts, k.capacity) - m.Config.DecodeBytes(k.rows, 0, k.ts, 0)
	return s, nil
}

// load readies the step for a new decoding of e's sources, each repeated
// for beams rows: the sources' cross-attention keys and values and mask
// are copied in, and the cache emptied.
func (s *cachedStep) load(e *encoderGraph, beams int) error {
	for i, c := range s.cross {
		out, err := e.output(i + 1)
		if err != nil {
			return err
		}
		repeatRows(c, out, e.batch, beams)
	}
	repeatRows(s.memMask, e.mask, e.batch, beams)
	s.mask.Zero()
	s.filled = 0
	return nil
}

// cachedStepper is one call's use of a cachedStep, which it gives back to
// the model when decoding ends.
type cachedStepper struct {
	*cachedStep
	m      *Model
	failed bool // a run failed: the step is closed, not cached again
}

// Step runs each row's last token, at position and cache slot t.
func (s *cachedStepper) Step(prefix [][]int) ([][]float64, error) {
	out, err := s.step(prefix)
	if err != nil {
		s.failed = true
	}
	return out, err
}

func (s *cachedStepper) close() {
	if s.failed {
		s.Close()
		return
	}
	s.m.graphs.step.Put(s.key, s.cachedStep, s.bytes)
}

// step runs each row's last token, at position and cache slot t.
func (s *cachedStep) step(prefix [][]int) ([][]float64, error) {
	t := len(prefix[0]) - 1
	capacity := s.key.capacity
	if t >= capacity {
		return nil, fmt.Errorf("seq2seq: step %d is past the cache's %d slots", t, capacity)
	}
	for r, p := range prefix {
		s.ids[r] = p[t]
	}
	// Steps come in order 0, 1, 2, … and every row is at the same step, so
	// the mask of occupied slots gains slot t in each row (reordering rows
	// does not change it).
	switch d := s.maskData.(type) {
	case []float32:
		for r := range prefix {
			d[r*capacity+t] = 1
		}
	case []float64:
		for r := range prefix {
			d[r*capacity+t] = 1
		}
	}
	s.slot[0] = t
	s.filled = t + 1
	if err := s.pos.SetOffset(t); err != nil {
		return nil, err
	}
	return s.run()
}

// Reorder permutes the rows of every self-attention cache (the slots
// written so far; see layers.KVCaches.Reorder). The cross-attention keys
// and values of a row's source stay: beams move within their source.
func (s *cachedStep) Reorder(parents []int) error {
	if err := s.caches.Reorder(parents, s.filled); err != nil {
		return fmt.Errorf("seq2seq: %w", err)
	}
	return nil
}

// fullStep reruns every row's whole prefix each step with no cache: the
// reference that cached decoding must equal. It keeps one graph per prefix
// length.
type fullStep struct {
	m               *Model
	rows            int
	memory, memMask *tensor.Dense // (R, Ts′, D) and (R, Ts′)
	graphs          map[int]*fullGraph
}

type fullGraph struct {
	*graphRun
	ids []int // (R, T)
}

// Step runs the whole prefixes (R, T).
func (s *fullStep) Step(prefix [][]int) ([][]float64, error) {
	n := len(prefix[0])
	fg, ok := s.graphs[n]
	if !ok {
		g := s.m.Store.NewGraph()
		ids := g.IntInput("decoder_input_ids", s.rows, n)
		fg = &fullGraph{ids: layers.Ints(ids)}
		memory := g.Bind("encoder_outputs", s.memory)
		h, err := s.m.decode(g, ids, nil, memory, g.Bind("encoder_attention_mask", s.memMask))
		if err != nil {
			return nil, err
		}
		logits, err := s.m.Head(g, h)
		if err != nil {
			return nil, err
		}
		if fg.graphRun, err = newGraphRun(g, logits, s.rows); err != nil {
			return nil, err
		}
		s.graphs[n] = fg
	}
	for r, p := range prefix {
		copy(fg.ids[r*n:(r+1)*n], p)
	}
	return fg.run()
}

// Reorder has nothing to do: Step reads the prefixes afresh.
func (s *fullStep) Reorder([]int) error { return nil }

func (s *fullStep) close() {
	for _, g := range s.graphs {
		g.close()
	}
}

// graphRun is a compiled decoder graph whose output is logits (R, T, V).
type graphRun struct{ *layers.LastLogits }

func newGraphRun(g *layers.Graph, logits *gorgonia.Node, rows int) (*graphRun, error) {
	l, err := g.CompileLastLogits(logits, rows)
	if err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	return &graphRun{l}, nil
}

// run executes the graph and returns the logits of each row's last
// position (R, V), valid until the next run.
func (r *graphRun) run() ([][]float64, error) {
	out, err := r.Run()
	if err != nil {
		return nil, fmt.Errorf("seq2seq: decoder: %w", err)
	}
	return out, nil
}

func (r *graphRun) close() { r.Close() }

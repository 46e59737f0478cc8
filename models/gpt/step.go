package gpt

import (
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
)

// stepper runs the model for package decode over R rows (prompts of any
// lengths, left-padded into one batch; R = B·K for beam search): each
// Step maps every row's tokens so far to its next-token logits (R, V).
//
// With the KV cache the first Step runs the prompts, left-padded to a
// common length P, and every later Step one new token per row over the
// cached keys and values, whose capacity C is min(n_positions, P + the
// tokens asked for − 1). Once C is reached, and always without the cache,
// each Step reruns the last n_positions tokens of every row: nanoGPT's
// sliding window. Cached and uncached steps give the same logits.
type stepper struct {
	m                *Model
	maxNew           int  // tokens the caller may ask for: sizes the cache
	noCache, noSlide bool // decode every step afresh; a context past n_positions is an error
	steps            int  // Steps so far

	onCache  bool
	plen     int             // P: the longest prompt
	capacity int             // C
	pads     []int           // each row's left padding in the cache
	caches   []*tensor.Dense // per layer K and V, (R·h, C, d_head)
	one      *stepGraph      // a single new token per row through the cache
	occupied []bool          // (R, C): slots holding a row's tokens
	keep     []bool          // scratch: the uncached mask
	full     map[int]*stepGraph
	graphs   []*stepGraph
	tmp32    []float32 // scratch for Reorder
	tmp64    []float64
}

func (m *Model) newStepper(maxNew int, noCache, noSlide bool) *stepper {
	return &stepper{m: m, maxNew: maxNew, noCache: noCache, noSlide: noSlide, full: map[int]*stepGraph{}}
}

// Step returns each row's next-token logits (R, V), valid until the next
// Step.
func (s *stepper) Step(seqs [][]int) ([][]float64, error) {
	t := s.steps
	s.steps++
	if t == 0 {
		for _, q := range seqs {
			s.plen = max(s.plen, len(q))
		}
		if !s.noCache && s.plen <= s.m.Config.NPositions {
			return s.prefill(seqs)
		}
	} else if s.onCache {
		if length := s.plen + t - 1; length < s.capacity {
			return s.cached(seqs, length)
		}
		s.onCache = false
	}
	return s.uncached(seqs)
}

// Reorder moves every cache row to where beam search wants it; the
// uncached path reads the rows afresh and needs nothing.
func (s *stepper) Reorder(parents []int) error {
	if !s.onCache {
		return nil
	}
	for _, c := range s.caches {
		switch d := c.Data().(type) {
		case []float32:
			s.tmp32 = decode.ReorderRows(d, parents, s.tmp32)
		case []float64:
			s.tmp64 = decode.ReorderRows(d, parents, s.tmp64)
		default:
			return fmt.Errorf("gpt: a KV cache of %v", c.Dtype())
		}
	}
	pads := append([]int(nil), s.pads...)
	for r, p := range parents {
		s.pads[r] = pads[p]
	}
	return nil
}

func (s *stepper) close() {
	for _, g := range s.graphs {
		g.close()
	}
}

// prefill runs the prompts (R, P) into fresh caches.
func (s *stepper) prefill(seqs [][]int) ([][]float64, error) {
	b, n := len(seqs), s.m.Config.NPositions
	s.capacity = max(s.plen, min(n, s.plen+s.maxNew-1))
	for _, l := range s.m.H.Layers {
		shape := l.SelfAttn.CacheShape(b, s.capacity)
		for range 2 {
			s.caches = append(s.caches, tensor.New(tensor.WithShape(shape...), tensor.Of(s.m.Store.Dtype())))
		}
	}
	s.pads = make([]int, b)
	for r, q := range seqs {
		s.pads[r] = s.plen - len(q)
	}
	g, err := s.m.newCachedGraph(b, s.plen, s.caches)
	if err != nil {
		return nil, err
	}
	s.graphs = append(s.graphs, g)
	ids, pos := g.ids, g.pos
	for r, q := range seqs {
		for j := 0; j < s.plen; j++ {
			ids[r*s.plen+j], pos[r*s.plen+j] = 0, 0
			if j >= s.pads[r] {
				ids[r*s.plen+j], pos[r*s.plen+j] = q[j-s.pads[r]], j-s.pads[r]
			}
		}
	}
	s.occupied = make([]bool, b*s.capacity)
	s.setSlots(g.mask, s.plen)
	s.onCache = true
	return g.run()
}

// cached runs each row's last token, written at cache slot length.
func (s *stepper) cached(seqs [][]int, length int) ([][]float64, error) {
	if s.one == nil {
		g, err := s.m.newCachedGraph(len(seqs), 1, s.caches)
		if err != nil {
			return nil, err
		}
		s.one = g
		s.graphs = append(s.graphs, g)
	}
	for r, q := range seqs {
		s.one.ids[r], s.one.pos[r] = q[len(q)-1], length-s.pads[r]
	}
	s.one.slot[0] = length
	s.setSlots(s.one.mask, length+1)
	return s.one.run()
}

// setSlots marks slots [pad, upto) of each row as holding its tokens.
func (s *stepper) setSlots(mask any, upto int) {
	c := s.capacity
	for r, pad := range s.pads {
		for j := 0; j < c; j++ {
			s.occupied[r*c+j] = j < upto && j >= pad
		}
	}
	setMask(mask, s.occupied)
}

// uncached runs the last n_positions tokens of every row (left-padded to a
// common length) with no cache.
func (s *stepper) uncached(seqs [][]int) ([][]float64, error) {
	l := 0
	for _, q := range seqs {
		l = max(l, len(q))
	}
	n := s.m.Config.NPositions
	if l > n && s.noSlide {
		return nil, fmt.Errorf("gpt: the context reached %d tokens, more than n_positions %d, and the sliding window is off", l, n)
	}
	w := min(l, n)
	g, ok := s.full[w]
	if !ok {
		var err error
		if g, err = s.m.newFullGraph(len(seqs), w); err != nil {
			return nil, err
		}
		s.full[w] = g
		s.graphs = append(s.graphs, g)
	}
	ids, pos := g.ids, g.pos
	s.keep = slices.Grow(s.keep[:0], len(seqs)*w)[:len(seqs)*w]
	clear(s.keep)
	for r, q := range seqs {
		pad := l - len(q)
		first := max(pad, l-w) // the window's first real column
		for c := l - w; c < l; c++ {
			i := r*w + c - (l - w)
			ids[i], pos[i] = 0, 0
			if c >= pad {
				ids[i], pos[i], s.keep[i] = q[c-pad], c-first, true
			}
		}
	}
	setMask(g.mask, s.keep)
	return g.run()
}

// stepGraph is one compiled evaluation graph of fixed shape that maps a
// chunk of tokens (B, T) to the logits of each row's last token. Its inputs
// are tensors bound into the graph and refilled before each run.
type stepGraph struct {
	*layers.LastLogits
	ids, pos []int // (B, T)
	mask     any   // (B, T) without a cache, (B, C) with one: []float32 or []float64
	slot     []int // (1), with a cache
}

// newFullGraph runs the whole context (B, T) with no cache.
func (m *Model) newFullGraph(b, t int) (*stepGraph, error) {
	g := m.Store.NewGraph()
	ids, pos, mask := g.IntInput("input_ids", b, t), g.IntInput("position_ids", b, t), g.Input("attention_mask", b, t)
	s := &stepGraph{ids: layers.Ints(ids), pos: layers.Ints(pos), mask: data(mask)}
	logits, err := m.Forward(g, Inputs{IDs: ids, Mask: mask, Positions: pos})
	if err != nil {
		return nil, err
	}
	return s.compile(g, logits, b), nil
}

// newCachedGraph runs a chunk (B, T) written at the caches' slot, reading
// the caches: T > 1 for a prompt at slot 0, T = 1 for each new token.
func (m *Model) newCachedGraph(b, t int, caches []*tensor.Dense) (*stepGraph, error) {
	g := m.Store.NewGraph()
	capacity := caches[0].Shape()[1]
	ids, pos, slot := g.IntInput("input_ids", b, t), g.IntInput("position_ids", b, t), g.IntInput("slot", 1)
	mask := g.Input("cache_mask", b, capacity)
	s := &stepGraph{ids: layers.Ints(ids), pos: layers.Ints(pos), slot: layers.Ints(slot), mask: data(mask)}
	h, err := m.embed(g, Inputs{IDs: ids, Positions: pos})
	if err != nil {
		return nil, err
	}
	kv := make([]*layers.KVCache, len(m.H.Layers))
	for i := range kv {
		kv[i] = &layers.KVCache{K: g.Bind("past_key", caches[2*i]), V: g.Bind("past_value", caches[2*i+1]), Slot: slot}
	}
	if h, err = m.H.ForwardCached(g, h, mask, kv); err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	logits, err := m.head(g, h)
	if err != nil {
		return nil, err
	}
	return s.compile(g, logits, b), nil
}

// data is the backing slice of the tensor an input node is bound to: the
// graph reads it at every run, and fetching it once saves boxing it at
// every step.
func data(n *gorgonia.Node) any { return n.Value().Data() }

func (s *stepGraph) compile(g *layers.Graph, logits *gorgonia.Node, b int) *stepGraph {
	s.LastLogits = g.CompileLastLogits(logits, b)
	return s
}

// run executes the graph and returns each row's last-token logits (B, V),
// valid until the next run.
func (s *stepGraph) run() ([][]float64, error) {
	out, err := s.Run()
	if err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	return out, nil
}

func (s *stepGraph) close() { s.Close() }

// setMask fills a float mask's data from 0/1 values.
func setMask(mask any, keep []bool) {
	switch d := mask.(type) {
	case []float32:
		for i, k := range keep {
			d[i] = 0
			if k {
				d[i] = 1
			}
		}
	case []float64:
		for i, k := range keep {
			d[i] = 0
			if k {
				d[i] = 1
			}
		}
	}
}

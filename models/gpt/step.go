package gpt

import (
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// stepper runs the model for package decode over R rows (prompts of any
// lengths, left-padded into one batch; R = B·K for beam search): each
// Step maps every row's tokens so far to its next-token logits (R, V).
//
// With the KV cache the first Step runs the prompts, left-padded to a
// common length P′ (the longest prompt P rounded up to a multiple of
// promptBucket), and every later Step one new token per row over the
// cached keys and values, min(n_positions − P, the tokens asked for − 1)
// steps in all, in a cache of capacity C (rounded up to a multiple of
// capacityBucket). After those, and always without the cache, each Step
// reruns the last n_positions tokens of every row (nanoGPT's sliding
// window), left-padded to a multiple of windowBucket. Padding is masked
// out, so cached and uncached steps give the same logits.
//
// The graphs come from the model's caches (Model.graphs), keyed by these
// rounded shapes, and go back there when decoding ends: a later call with
// the same batch and similar lengths compiles nothing.
type stepper struct {
	m                *Model
	maxNew           int  // tokens the caller may ask for: sizes the cache
	noCache, noSlide bool // decode every step afresh; a context past n_positions is an error
	steps            int  // Steps so far
	failed           bool // a run failed: the graphs in use are closed, not cached again

	onCache     bool
	plen        int       // P: the longest prompt
	cachedSteps int       // Steps after the prefill that run through the cache
	pads        []int     // each row's left padding in the cache
	kv          *kvGraphs // the caches and their graphs, taken from the model for this call
	kvKey       kvKey
	occupied    []bool     // (R, C): slots holding a row's tokens
	filled      int        // slots written so far, padding included
	full        *stepGraph // the uncached graph in use, taken from the model
	fullKey     fullKey
	keep        []bool    // scratch: the uncached mask
	tmp32       []float32 // scratch for Reorder
	tmp64       []float64
}

// The rounding of decoding shapes, so that calls of nearby lengths share
// graphs. Padding costs compute in proportion (the prefill and an
// uncached step run every padded column; attention reads every slot of
// the cache that the mask does not exclude), so the buckets are small.
const (
	promptBucket   = 16 // the prefill's width P′
	capacityBucket = 64 // the KV cache's capacity C
	windowBucket   = 16 // an uncached step's width
)

// kvKey is the shape of a cached decoding: R rows, a prefill of width P′,
// a cache of C slots.
type kvKey struct{ rows, prompt, capacity int }

// fullKey is the shape of an uncached step: R rows of width W.
type fullKey struct{ rows, width int }

// kvGraphs are the KV caches of R rows and the two graphs that write and
// read them: the prefill (R, P′) at slot 0 and a single token (R, 1) at
// any slot. Both read the same mask (R, C) of occupied slots.
type kvGraphs struct {
	caches  []*tensor.Dense // per layer K and V, (R·h, C, d_head)
	mask    any             // (R, C): []float32 or []float64
	prefill *stepGraph
	one     *stepGraph
	bytes   int64 // the estimate the model's cache is told
}

// Close releases both graphs.
func (kv *kvGraphs) Close() {
	kv.prefill.Close()
	kv.one.Close()
}

// graphs are the compiled decoding graphs a model keeps between calls.
type graphs struct {
	kv   layers.GraphCache[kvKey, *kvGraphs]
	full layers.GraphCache[fullKey, *stepGraph]
}

// ReleaseGraphs frees the compiled graphs, and the KV caches bound into
// them, that Generate and BeamSearch keep between calls (at most
// layers.DefaultMaxGraphs of each kind, of at most layers.DefaultMaxBytes
// each). The model stays usable: the next call compiles what it needs.
// Changing the weights needs no release: the graphs read the parameter
// tensors, which loading and training update in place. It is safe to call
// while other goroutines decode: graphs in use are theirs until the call
// that took them is done.
func (m *Model) ReleaseGraphs() {
	m.graphs.kv.Reset()
	m.graphs.full.Reset()
}

func (m *Model) newStepper(maxNew int, noCache, noSlide bool) *stepper {
	return &stepper{m: m, maxNew: maxNew, noCache: noCache, noSlide: noSlide}
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
		if t <= s.cachedSteps {
			return s.cached(seqs, t)
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
	for _, c := range s.kv.caches {
		// Only the slots written so far hold anything (the mask hides the
		// rest): those of each head move, d_head values per slot.
		shape := c.Shape()
		heads, used := shape[0]/len(parents), s.filled*shape[2]
		switch d := c.Data().(type) {
		case []float32:
			s.tmp32 = decode.ReorderCache(d, parents, s.tmp32, heads, used)
		case []float64:
			s.tmp64 = decode.ReorderCache(d, parents, s.tmp64, heads, used)
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

// close gives the graphs back to the model, or closes them after a failed
// run.
func (s *stepper) close() {
	if s.kv != nil {
		if s.failed {
			s.kv.Close()
		} else {
			s.m.graphs.kv.Put(s.kvKey, s.kv, s.kv.bytes)
		}
		s.kv = nil
	}
	s.putFull()
}

func (s *stepper) putFull() {
	if s.full == nil {
		return
	}
	if s.failed {
		s.full.Close()
	} else {
		s.m.graphs.full.Put(s.fullKey, s.full, s.m.Config.ActivationBytes(s.fullKey.rows, s.fullKey.width, true, false))
	}
	s.full = nil
}

// run executes g, marking the stepper failed if it does not run.
func (s *stepper) run(g *stepGraph) ([][]float64, error) {
	out, err := g.run()
	if err != nil {
		s.failed = true
	}
	return out, err
}

// prefill runs the prompts (R, P′), left-padded, into the caches' slots
// [0, P′).
func (s *stepper) prefill(seqs [][]int) ([][]float64, error) {
	b, n := len(seqs), s.m.Config.NPositions
	p := layers.RoundUp(s.plen, promptBucket)
	s.cachedSteps = max(0, min(n-s.plen, s.maxNew-1))
	key := kvKey{rows: b, prompt: p, capacity: layers.RoundUp(p+s.cachedSteps, capacityBucket)}
	kv, err := s.m.graphs.kv.Get(key, func() (*kvGraphs, error) { return s.m.newKVGraphs(key) })
	if err != nil {
		return nil, err
	}
	s.kv, s.kvKey = kv, key
	g := kv.prefill
	s.pads = make([]int, b)
	for r, q := range seqs {
		s.pads[r] = p - len(q)
		for j := 0; j < p; j++ {
			i := r*p + j
			g.ids[i], g.pos[i] = 0, 0
			if j >= s.pads[r] {
				g.ids[i], g.pos[i] = q[j-s.pads[r]], j-s.pads[r]
			}
		}
	}
	g.slot[0] = 0
	s.filled = p
	s.occupied = make([]bool, b*key.capacity)
	s.setSlots(p)
	s.onCache = true
	return s.run(g)
}

// cached runs each row's last token, the t-th after the prompts, written
// at cache slot P′ + t − 1.
func (s *stepper) cached(seqs [][]int, t int) ([][]float64, error) {
	g, slot := s.kv.one, s.kvKey.prompt+t-1
	for r, q := range seqs {
		g.ids[r], g.pos[r] = q[len(q)-1], slot-s.pads[r]
	}
	g.slot[0] = slot
	s.filled = slot + 1
	s.setSlots(slot + 1)
	return s.run(g)
}

// setSlots marks slots [pad, upto) of each row as holding its tokens.
func (s *stepper) setSlots(upto int) {
	c := s.kvKey.capacity
	for r, pad := range s.pads {
		for j := 0; j < c; j++ {
			s.occupied[r*c+j] = j < upto && j >= pad
		}
	}
	setMask(s.kv.mask, s.occupied)
}

// uncached runs the last n_positions tokens of every row, left-padded to
// the longest row and then to a multiple of windowBucket, with no cache.
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
	key := fullKey{rows: len(seqs), width: min(layers.RoundUp(w, windowBucket), n)}
	if s.full == nil || s.fullKey != key {
		s.putFull()
		g, err := s.m.graphs.full.Get(key, func() (*stepGraph, error) { return s.m.newFullGraph(key.rows, key.width) })
		if err != nil {
			return nil, err
		}
		s.full, s.fullKey = g, key
	}
	g, width := s.full, key.width
	extra := width - w // columns of padding before the window
	s.keep = slices.Grow(s.keep[:0], len(seqs)*width)[:len(seqs)*width]
	clear(s.keep)
	for r, q := range seqs {
		pad := l - len(q)
		first := max(pad, l-w) // the window's first real column
		for c := 0; c < width; c++ {
			i := r*width + c
			g.ids[i], g.pos[i] = 0, 0
			if col := c - extra + l - w; c >= extra && col >= pad { // col: the column in the rows left-padded to l
				g.ids[i], g.pos[i], s.keep[i] = q[col-pad], col-first, true
			}
		}
	}
	setMask(g.mask, s.keep)
	return s.run(g)
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
	return s.compile(g, logits, b)
}

// newKVGraphs makes the caches of a cached decoding of shape k and
// compiles its prefill and single-token graphs.
func (m *Model) newKVGraphs(k kvKey) (*kvGraphs, error) {
	kv := &kvGraphs{}
	for _, l := range m.H.Layers {
		shape := l.SelfAttn.CacheShape(k.rows, k.capacity)
		for range 2 {
			kv.caches = append(kv.caches, tensor.New(tensor.WithShape(shape...), tensor.Of(m.Store.Dtype())))
		}
	}
	mask := tensor.New(tensor.WithShape(k.rows, k.capacity), tensor.Of(m.Store.Dtype()))
	kv.mask = mask.Data()
	var err error
	if kv.prefill, err = m.newCachedGraph(k.rows, k.prompt, kv.caches, mask); err != nil {
		return nil, err
	}
	if kv.one, err = m.newCachedGraph(k.rows, 1, kv.caches, mask); err != nil {
		kv.prefill.Close()
		return nil, err
	}
	c := m.Config
	kv.bytes = models.Sum(c.ActivationBytes(k.rows, k.prompt, true, false),
		models.Mul(4, int64(c.NLayer), int64(k.rows), int64(c.NHead), int64(k.prompt+1), int64(k.capacity)), // scores over the cache
		models.Mul(int64(m.Store.Dtype().Size()), 2, int64(c.NLayer), int64(k.rows), int64(k.capacity), int64(c.NEmbd)))
	return kv, nil
}

// newCachedGraph runs a chunk (B, T) written at the caches' slot, reading
// the caches and the mask (B, C) of their occupied slots: T > 1 for a
// prompt at slot 0, T = 1 for each new token.
func (m *Model) newCachedGraph(b, t int, caches []*tensor.Dense, occupied *tensor.Dense) (*stepGraph, error) {
	g := m.Store.NewGraph()
	ids, pos, slot := g.IntInput("input_ids", b, t), g.IntInput("position_ids", b, t), g.IntInput("slot", 1)
	mask := g.Bind("cache_mask", occupied)
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
	return s.compile(g, logits, b)
}

// data is the backing slice of the tensor an input node is bound to: the
// graph reads it at every run, and fetching it once saves boxing it at
// every step.
func data(n *gorgonia.Node) any { return n.Value().Data() }

func (s *stepGraph) compile(g *layers.Graph, logits *gorgonia.Node, b int) (*stepGraph, error) {
	var err error
	if s.LastLogits, err = g.CompileLastLogits(logits, b); err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	return s, nil
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

package layers

import (
	"errors"
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/internal/memcheck"
)

// CausalLM is a decoder-only causal language model as its decoding sees
// it: an embedding, a causal block stack and an LM head (embed → stack →
// head). A family gives its parts here, and NewStepper decodes with them
// for package decode, through KV caches: GPT's Generate and BeamSearch do,
// and so does any decoder-only family built of these blocks (learned or
// rotary positions, any norm, MLP, KVHeads and HeadDim).
//
// A CausalLM is safe for concurrent use by multiple goroutines if its
// parts are (the Store's graphs take turns) and each stepper is used by
// one goroutine.
type CausalLM struct {
	// Name names the model in errors ("gpt"); empty means "causal lm".
	Name string
	// Store holds the parameters; every decoding graph is built on it.
	Store *Store
	// Embed maps token ids (B, T) at positions (B, T), both int nodes, to
	// the stack's input (B, T, D). positions[b, t] is the absolute
	// position of row b's token t, counted from the row's first token
	// (left padding sits at 0 and is masked out): a family with learned
	// positions looks them up; one with a position encoder in its
	// attention may ignore them, the stack gets them too.
	Embed func(g *Graph, ids, positions *gorgonia.Node) (*gorgonia.Node, error)
	// Stack is the causal block stack (BlockConfig.Causal), with its final
	// norm when pre-norm.
	Stack *Encoder
	// Head maps the stack's output (B, T, D) to logits (B, T, V).
	Head func(g *Graph, h *gorgonia.Node) (*gorgonia.Node, error)
	// Context is the most positions the model takes (GPT's n_positions):
	// a longer row decodes through a sliding window of its last Context
	// tokens. > 0.
	Context int
	// ActivationBytes estimates the memory of a forward pass of rows
	// sequences of t tokens with the LM head, for the graph caches' bounds
	// (GPT's Config.ActivationBytes(rows, t, true, false)); nil counts 0.
	ActivationBytes func(rows, t int) int64
	// Graphs keeps compiled graphs between calls; nil compiles each
	// stepper's own and closes them when it is done.
	Graphs *CausalGraphs
}

// CausalGraphs are the compiled decoding graphs, and the KV caches bound
// into them, that a CausalLM keeps between calls, keyed by rows and
// rounded lengths: at most DefaultMaxGraphs cached decodings and as many
// uncached step graphs, of at most DefaultMaxBytes each (see GraphCache).
// The graphs read the parameter tensors, which loading and training update
// in place, so changing the weights needs no Reset. The zero value is
// ready to use; it is safe for concurrent use.
type CausalGraphs struct {
	kv   GraphCache[causalKVKey, *causalKV]
	full GraphCache[causalFullKey, *causalGraph]
}

// Reset frees the graphs kept (see GraphCache.Reset): graphs in use are
// their steppers' until those close.
func (c *CausalGraphs) Reset() {
	c.kv.Reset()
	c.full.Reset()
}

// Builds counts the graphs built so far: cached decodings (each a prefill
// and a single-token step over one set of KV caches) and uncached steps.
func (c *CausalGraphs) Builds() (cached, uncached int) { return c.kv.Builds(), c.full.Builds() }

// Len counts the graphs kept now, as Builds does.
func (c *CausalGraphs) Len() (cached, uncached int) {
	cached, _ = c.kv.Len()
	uncached, _ = c.full.Len()
	return cached, uncached
}

// NewStepperFunc makes the stepper of one decoding of lm with options o,
// in place of lm.NewStepper(o): a family's Generate calls it when its
// config sets one (models.TextGenerationConfig.Stepper), and calls the
// stepper's Close, if it has one, when the decoding ends. Package serve's
// continuous batching makes steppers whose rows share a running batch
// (CausalBatch).
type NewStepperFunc func(lm *CausalLM, o CausalOptions) (decode.Stepper, error)

// Start is the stepper of one decoding of lm with options o, f's or
// lm.NewStepper's when f is nil, and the function that closes it (the
// stepper's Close, or nothing when it has none).
func (f NewStepperFunc) Start(lm *CausalLM, o CausalOptions) (st decode.Stepper, closeFn func(), err error) {
	if f == nil {
		cs, err := lm.NewStepper(o)
		if err != nil {
			return nil, nil, err
		}
		return cs, cs.Close, nil
	}
	if st, err = f(lm, o); err != nil {
		return nil, nil, err
	}
	if c, ok := st.(interface{ Close() }); ok {
		return st, c.Close, nil
	}
	return st, func() {}, nil
}

// CausalOptions set a CausalStepper.
type CausalOptions struct {
	// MaxNewTokens is the most tokens the decoder asks for, > 0: it sizes
	// the KV caches.
	MaxNewTokens int
	// NoCache recomputes every row's whole context at every step.
	NoCache bool
	// NoSlidingWindow makes a context longer than CausalLM.Context an
	// error instead of cropping it to its last Context tokens.
	NoSlidingWindow bool
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

// causalKVKey is the shape of a cached decoding: R rows, a prefill of
// width P′, a cache of C slots.
type causalKVKey struct{ rows, prompt, capacity int }

// causalFullKey is the shape of an uncached step: R rows of width W.
type causalFullKey struct{ rows, width int }

// causalKV are the KV caches of R rows and the two graphs that write and
// read them: the prefill (R, P′) at slot 0 and a single token (R, 1) at
// any slot. Both read the same mask (R, C) of occupied slots.
type causalKV struct {
	caches  *KVCaches
	mask    any // (R, C): []float32 or []float64
	prefill *causalGraph
	one     *causalGraph
	bytes   int64 // the estimate the cache is told
}

// Close releases both graphs.
func (kv *causalKV) Close() {
	kv.prefill.Close()
	kv.one.Close()
}

// causalGraph is one compiled evaluation graph of fixed shape that maps a
// chunk of tokens (B, T) to the logits of each row's last token. Its
// inputs are tensors bound into the graph and refilled before each run.
type causalGraph struct {
	*LastLogits
	ids, pos []int // (B, T)
	mask     any   // (B, T) without a cache, (B, C) with one: []float32 or []float64
	slot     []int // (1), with a cache
}

// CausalStepper runs a CausalLM for package decode (a decode.Stepper)
// over R rows: prompts of any lengths, left-padded into one batch (R = B·K
// for beam search). Each Step maps every row's tokens so far to its
// next-token logits (R, V).
//
// With the KV cache the first Step runs the prompts, left-padded to a
// common length P′ (the longest prompt P rounded up to a multiple of 16),
// and every later Step one new token per row over the cached keys and
// values, min(Context − P, MaxNewTokens − 1) steps in all, in a cache of
// capacity C (rounded up to a multiple of 64). After those, and always
// without the cache, each Step reruns the last Context tokens of every row
// (nanoGPT's sliding window), left-padded to a multiple of 16. Padding is
// masked out and every row's positions count from its first token, so
// cached and uncached steps give the same logits; the stack's position
// encoders get the same positions both ways.
//
// The graphs come from CausalLM.Graphs, keyed by these rounded shapes, and
// go back there on Close: a later call with the same batch and similar
// lengths compiles nothing. A stepper is for one goroutine and one
// decoding; Close it when done.
type CausalStepper struct {
	lm               *CausalLM
	maxNew           int  // tokens the caller may ask for: sizes the cache
	noCache, noSlide bool // decode every step afresh; a context past Context is an error
	steps            int  // Steps so far
	rows             int  // R, the first Step's rows
	failed           bool // a run failed: the graphs in use are closed, not cached again

	onCache     bool
	plen        int       // P: the longest prompt
	cachedSteps int       // Steps after the prefill that run through the cache
	pads        []int     // each row's left padding in the cache
	kv          *causalKV // the caches and their graphs, taken from Graphs for this call
	kvKey       causalKVKey
	occupied    []bool       // (R, C): slots holding a row's tokens
	filled      int          // slots written so far, padding included
	full        *causalGraph // the uncached graph in use, taken from Graphs
	fullKey     causalFullKey
	keep        []bool // scratch: the uncached mask
}

func (lm *CausalLM) name() string {
	if lm.Name == "" {
		return "causal lm"
	}
	return lm.Name
}

// Validate reports a CausalLM whose parts are missing.
func (lm *CausalLM) Validate() error {
	switch {
	case lm.Store == nil || lm.Embed == nil || lm.Stack == nil || lm.Head == nil:
		return fmt.Errorf("%s: a causal LM needs its Store, Embed, Stack and Head", lm.name())
	case len(lm.Stack.Layers) == 0:
		return fmt.Errorf("%s: a causal LM's stack has no layers", lm.name())
	case lm.Context <= 0:
		return fmt.Errorf("%s: context %d must be positive", lm.name(), lm.Context)
	}
	for i, b := range lm.Stack.Layers {
		if !b.causal {
			return fmt.Errorf("%s: layer %d is not causal (BlockConfig.Causal)", lm.name(), i)
		}
	}
	return nil
}

// NewStepper returns a stepper for one decoding (see CausalStepper).
func (lm *CausalLM) NewStepper(o CausalOptions) (*CausalStepper, error) {
	if err := lm.Validate(); err != nil {
		return nil, err
	}
	if o.MaxNewTokens <= 0 {
		return nil, fmt.Errorf("%s: max new tokens %d must be positive", lm.name(), o.MaxNewTokens)
	}
	return &CausalStepper{lm: lm, maxNew: o.MaxNewTokens, noCache: o.NoCache, noSlide: o.NoSlidingWindow}, nil
}

// Step returns each row's next-token logits (R, V), valid until the next
// Step (decode.Stepper).
func (s *CausalStepper) Step(seqs [][]int) ([][]float64, error) {
	if len(seqs) == 0 {
		return nil, fmt.Errorf("%s: a step of no rows", s.lm.name())
	}
	for r, q := range seqs {
		if len(q) == 0 {
			return nil, fmt.Errorf("%s: row %d is empty; start it with a token such as bos", s.lm.name(), r)
		}
	}
	if s.steps > 0 && len(seqs) != s.rows {
		return nil, fmt.Errorf("%s: step %d has %d rows, the first had %d", s.lm.name(), s.steps, len(seqs), s.rows)
	}
	t := s.steps
	s.steps++
	if t == 0 {
		s.rows = len(seqs)
		for _, q := range seqs {
			s.plen = max(s.plen, len(q))
		}
		if !s.noCache && s.plen <= s.lm.Context {
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

// Reorder moves every cache row to where beam search wants it
// (decode.Stepper); the uncached path reads the rows afresh and needs
// nothing.
func (s *CausalStepper) Reorder(parents []int) error {
	if !s.onCache {
		return nil
	}
	if err := s.kv.caches.Reorder(parents, s.filled); err != nil {
		return fmt.Errorf("%s: %w", s.lm.name(), err)
	}
	pads := slices.Clone(s.pads)
	for r, p := range parents {
		s.pads[r] = pads[p]
	}
	return nil
}

// Close gives the graphs back to CausalLM.Graphs, or closes them after a
// failed run or without Graphs. The stepper is done.
func (s *CausalStepper) Close() {
	if s.kv != nil {
		if s.failed || s.lm.Graphs == nil {
			s.kv.Close()
		} else {
			s.lm.Graphs.kv.Put(s.kvKey, s.kv, s.kv.bytes)
		}
		s.kv = nil
	}
	s.putFull()
}

func (s *CausalStepper) putFull() {
	if s.full == nil {
		return
	}
	if s.failed || s.lm.Graphs == nil {
		s.full.Close()
	} else {
		s.lm.Graphs.full.Put(s.fullKey, s.full, s.lm.activationBytes(s.fullKey.rows, s.fullKey.width))
	}
	s.full = nil
}

func (lm *CausalLM) activationBytes(rows, t int) int64 {
	if lm.ActivationBytes == nil {
		return 0
	}
	return lm.ActivationBytes(rows, t)
}

// getKV takes the cached decoding of shape k from Graphs, or builds it.
func (lm *CausalLM) getKV(k causalKVKey) (*causalKV, error) {
	if lm.Graphs == nil {
		return lm.newKV(k)
	}
	return lm.Graphs.kv.Get(k, func() (*causalKV, error) { return lm.newKV(k) })
}

func (lm *CausalLM) getFull(k causalFullKey) (*causalGraph, error) {
	if lm.Graphs == nil {
		return lm.newFullGraph(k.rows, k.width)
	}
	return lm.Graphs.full.Get(k, func() (*causalGraph, error) { return lm.newFullGraph(k.rows, k.width) })
}

// run executes g, marking the stepper failed if it does not run.
func (s *CausalStepper) run(g *causalGraph) ([][]float64, error) {
	out, err := g.Run()
	if err != nil {
		s.failed = true
		return nil, fmt.Errorf("%s: %w", s.lm.name(), err)
	}
	return out, nil
}

// prefill runs the prompts (R, P′), left-padded, into the caches' slots
// [0, P′).
func (s *CausalStepper) prefill(seqs [][]int) ([][]float64, error) {
	b, n := len(seqs), s.lm.Context
	p := RoundUp(s.plen, promptBucket)
	s.cachedSteps = max(0, min(n-s.plen, s.maxNew-1))
	key := causalKVKey{rows: b, prompt: p, capacity: RoundUp(p+s.cachedSteps, capacityBucket)}
	kv, err := s.lm.getKV(key)
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
// at cache slot P′ + t − 1, at its row's next position.
func (s *CausalStepper) cached(seqs [][]int, t int) ([][]float64, error) {
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
func (s *CausalStepper) setSlots(upto int) {
	c := s.kvKey.capacity
	for r, pad := range s.pads {
		for j := 0; j < c; j++ {
			s.occupied[r*c+j] = j < upto && j >= pad
		}
	}
	setMask(s.kv.mask, s.occupied)
}

// uncached runs the last Context tokens of every row, left-padded to the
// longest row and then to a multiple of windowBucket, with no cache.
func (s *CausalStepper) uncached(seqs [][]int) ([][]float64, error) {
	l := 0
	for _, q := range seqs {
		l = max(l, len(q))
	}
	n := s.lm.Context
	if l > n && s.noSlide {
		return nil, fmt.Errorf("%s: the context reached %d tokens, more than the model's %d positions, and the sliding window is off", s.lm.name(), l, n)
	}
	w := min(l, n)
	key := causalFullKey{rows: len(seqs), width: min(RoundUp(w, windowBucket), n)}
	if s.full == nil || s.fullKey != key {
		s.putFull()
		g, err := s.lm.getFull(key)
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

// newFullGraph runs the whole context (B, T) with no cache.
func (lm *CausalLM) newFullGraph(b, t int) (*causalGraph, error) {
	g := lm.Store.NewGraph()
	ids, pos, mask := g.IntInput("input_ids", b, t), g.IntInput("position_ids", b, t), g.Input("attention_mask", b, t)
	s := &causalGraph{ids: Ints(ids), pos: Ints(pos), mask: mask.Value().Data()}
	h, err := lm.Embed(g, ids, pos)
	if err != nil {
		return nil, err
	}
	if h, err = lm.Stack.ForwardAt(g, h, mask, pos); err != nil {
		return nil, fmt.Errorf("%s: %w", lm.name(), err)
	}
	return lm.compile(g, s, h, b)
}

// newKV makes the caches of a cached decoding of shape k and compiles its
// prefill and single-token graphs.
func (lm *CausalLM) newKV(k causalKVKey) (*causalKV, error) {
	attns := make([]*MultiHeadAttention, len(lm.Stack.Layers))
	for i, b := range lm.Stack.Layers {
		attns[i] = b.SelfAttn
	}
	kv := &causalKV{caches: NewKVCaches(attns, k.rows, k.capacity, lm.Store.Dtype())}
	mask := tensor.New(tensor.WithShape(k.rows, k.capacity), tensor.Of(lm.Store.Dtype()))
	kv.mask = mask.Data()
	var err error
	if kv.prefill, err = lm.newCachedGraph(k.rows, k.prompt, kv.caches, mask); err != nil {
		return nil, err
	}
	if kv.one, err = lm.newCachedGraph(k.rows, 1, kv.caches, mask); err != nil {
		kv.prefill.Close()
		return nil, err
	}
	// The forward pass of the prefill, the scores of its P′ queries and
	// the single token's over the cache, and the caches.
	kv.bytes = memcheck.Sum(lm.activationBytes(k.rows, k.prompt), kv.caches.Bytes())
	for _, a := range attns {
		kv.bytes = memcheck.Sum(kv.bytes, memcheck.Mul(4, int64(k.rows), int64(a.Heads), int64(k.prompt+1), int64(k.capacity)))
	}
	return kv, nil
}

// newCachedGraph runs a chunk (B, T) written at the caches' slot, reading
// the caches and the mask (B, C) of their occupied slots: T > 1 for a
// prompt at slot 0, T = 1 for each new token.
func (lm *CausalLM) newCachedGraph(b, t int, caches *KVCaches, occupied *tensor.Dense) (*causalGraph, error) {
	return lm.newCachedGraphSlots(b, t, caches, occupied, 1)
}

// newCachedGraphSlots is newCachedGraph with slots write slots: 1 for
// every row at one slot, b for a slot per row (CausalBatch).
func (lm *CausalLM) newCachedGraphSlots(b, t int, caches *KVCaches, occupied *tensor.Dense, slots int) (*causalGraph, error) {
	g := lm.Store.NewGraph()
	ids, pos, slot := g.IntInput("input_ids", b, t), g.IntInput("position_ids", b, t), g.IntInput("slot", slots)
	mask := g.Bind("cache_mask", occupied)
	s := &causalGraph{ids: Ints(ids), pos: Ints(pos), slot: Ints(slot), mask: mask.Value().Data()}
	h, err := lm.Embed(g, ids, pos)
	if err != nil {
		return nil, err
	}
	if h, err = lm.Stack.ForwardCached(g, h, mask, caches.Bind(g, slot, pos)); err != nil {
		return nil, fmt.Errorf("%s: %w", lm.name(), err)
	}
	return lm.compile(g, s, h, b)
}

// compile adds the head to g, whose stack output is h (B, T, D), and
// compiles it. A step reads only each row's last position (every row ends
// at column T − 1: rows are left-padded), so the head maps that position
// alone, (B, 1, D) → (B, 1, V): the other T − 1 positions' logits would
// cost T times a single token's vocabulary projection (a fifth of a
// 128-token prefill of SmolLM-135M, whose vocabulary is 49,152).
func (lm *CausalLM) compile(g *Graph, s *causalGraph, h *gorgonia.Node, b int) (*causalGraph, error) {
	h, err := lastPosition(g, h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", lm.name(), err)
	}
	logits, err := lm.Head(g, h)
	if err != nil {
		return nil, err
	}
	if logits == nil {
		return nil, errors.New(lm.name() + ": Head returned no logits")
	}
	if s.LastLogits, err = g.CompileLastLogits(logits, b); err != nil {
		return nil, fmt.Errorf("%s: %w", lm.name(), err)
	}
	return s, nil
}

// lastPosition picks position T − 1 of every row of h (B, T, D), giving
// (B, 1, D); h itself when T is 1.
func lastPosition(g *Graph, h *gorgonia.Node) (*gorgonia.Node, error) {
	if h.Dims() != 3 {
		return nil, fmt.Errorf("the stack's output is %v, want (B, T, D)", h.Shape())
	}
	b, t, d := h.Shape()[0], h.Shape()[1], h.Shape()[2]
	if t == 1 {
		return h, nil
	}
	last := make([]int, b)
	for i := range last {
		last[i] = t - 1
	}
	idx, err := g.IntConstant("last_position", last, b)
	if err != nil {
		return nil, err
	}
	y, err := SelectTokens(h, idx)
	if err != nil {
		return nil, fmt.Errorf("last position: %w", err)
	}
	if y, err = gorgonia.Reshape(y, []int{b, 1, d}); err != nil {
		return nil, fmt.Errorf("last position: %w", err)
	}
	return y, nil
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

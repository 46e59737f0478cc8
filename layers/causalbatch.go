package layers

import (
	"errors"
	"fmt"
	"slices"

	"gorgonia.org/tensor"
)

// ErrBatchFull is Join's error when every row of a CausalBatch is taken.
var ErrBatchFull = errors.New("every row of the running batch is taken")

// ErrNoRoom is Join's error for a sequence that the batch cannot hold to
// its end: its prompt and new tokens need more cache slots than a row
// has, or more positions than the model's context (the sliding window,
// which a shared cache cannot do). Decode it with a stepper of its own
// (CausalLM.NewStepper) instead.
var ErrNoRoom = errors.New("the sequence does not fit a row of the running batch")

// CausalBatch is a running batch for continuous batching: Rows
// independent sequences over one set of KV caches, each in its own row,
// which join (Join: the prompt is prefilled and its keys and values
// copied into a free row) and leave (Leave) between steps, while Step
// runs one new token of every row that has one in a single forward pass
// of (Rows, 1). Each row keeps its own length: the single-token graph
// writes each row's token at that row's next cache slot.
//
// A row holds its sequence exactly where a CausalStepper decoding that
// sequence alone holds it (the prompt left-padded to a multiple of 16,
// each new token in the next slot, positions counted from the prompt's
// first token), and the prefill is that stepper's own graph, so a
// sequence's logits are the ones it gets decoded alone, except for
// whatever rounding the (Rows, 1) matrix products do differently from
// (1, 1) ones.
//
// Rows that do not step (free, or a sequence that skips a step) write
// their token into a spare slot past the capacity, which no row's mask
// marks: they cost their share of the pass and change nothing.
//
// A CausalBatch is for one goroutine; its prefills take and give back
// graphs of CausalLM.Graphs, which other decodings share safely. Close it
// when done.
type CausalBatch struct {
	lm        *CausalLM
	rows, cap int // R and the slots a row may fill, C; the caches hold C + 1
	caches    *KVCaches
	maskT     *tensor.Dense        // (R, C+1), the occupied slots
	mask      any                  // its data
	one       map[int]*causalGraph // the single-token graph of the first n rows, by n
	live      []bool
	pads      []int  // a row's left padding
	next      []int  // a row's next slot
	occupied  []bool // (R, C+1)
	failed    bool
}

// NewBatch makes a running batch of rows rows of capacity slots each
// (see CausalBatch). A sequence of a P-token prompt and n new tokens
// needs RoundUp(P, 16) + n − 1 slots. The caches take rows × (capacity
// + 1) × 2 × layers × kv heads × head dim values.
func (lm *CausalLM) NewBatch(rows, capacity int) (*CausalBatch, error) {
	if err := lm.Validate(); err != nil {
		return nil, err
	}
	if rows < 1 || capacity < 1 {
		return nil, fmt.Errorf("%s: a running batch of %d rows of %d slots: both must be positive", lm.name(), rows, capacity)
	}
	attns := make([]*MultiHeadAttention, len(lm.Stack.Layers))
	for i, b := range lm.Stack.Layers {
		attns[i] = b.SelfAttn
	}
	b := &CausalBatch{lm: lm, rows: rows, cap: capacity, caches: NewKVCaches(attns, rows, capacity+1, lm.Store.Dtype()),
		live: make([]bool, rows), pads: make([]int, rows), next: make([]int, rows), occupied: make([]bool, rows*(capacity+1))}
	b.maskT = tensor.New(tensor.WithShape(rows, capacity+1), tensor.Of(lm.Store.Dtype()))
	b.mask, b.one = b.maskT.Data(), map[int]*causalGraph{}
	return b, nil
}

// graph is the single-token graph over the first n rows, bound to views
// of the caches' and the mask's first n rows, built on first use.
func (b *CausalBatch) graph(n int) (*causalGraph, error) {
	if g, ok := b.one[n]; ok {
		return g, nil
	}
	view := func(t *tensor.Dense, rows int) *tensor.Dense {
		shape := t.Shape().Clone()
		size := t.Size() / rows * n
		shape[0] = shape[0] / rows * n
		switch d := t.Data().(type) {
		case []float32:
			return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d[:size]))
		default:
			return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d.([]float64)[:size]))
		}
	}
	caches := &KVCaches{rows: n}
	for _, t := range b.caches.Tensors {
		caches.Tensors = append(caches.Tensors, view(t, b.rows))
	}
	g, err := b.lm.newCachedGraphSlots(n, 1, caches, view(b.maskT, b.rows), n)
	if err != nil {
		return nil, err
	}
	b.one[n] = g
	return g, nil
}

// Rows is R, the most sequences the batch holds.
func (b *CausalBatch) Rows() int { return b.rows }

// Capacity is the slots of one row.
func (b *CausalBatch) Capacity() int { return b.cap }

// Free counts the rows no sequence holds.
func (b *CausalBatch) Free() int {
	n := 0
	for _, l := range b.live {
		if !l {
			n++
		}
	}
	return n
}

// Bytes is the memory of the batch's KV caches.
func (b *CausalBatch) Bytes() int64 { return b.caches.Bytes() }

// Fits reports whether a sequence of a prompt of p tokens and up to maxNew
// new tokens fits a row to its end (else Join is ErrNoRoom).
func (b *CausalBatch) Fits(p, maxNew int) bool {
	return p >= 1 && maxNew >= 1 && p <= b.lm.Context && maxNew-1 <= b.lm.Context-p && RoundUp(p, promptBucket)+maxNew-1 <= b.cap
}

// Join prefills prompt (token ids) into a free row, for a decoding of up
// to maxNew new tokens, and returns the row and the logits (V) of the
// token after the prompt, which are the caller's. The prefill is the one
// a CausalStepper runs for the prompt alone, through CausalLM.Graphs.
// A full batch is ErrBatchFull, a sequence that does not fit ErrNoRoom.
func (b *CausalBatch) Join(prompt []int, maxNew int) (row int, logits []float64, err error) {
	if b.failed {
		return 0, nil, fmt.Errorf("%s: the running batch failed earlier; close it", b.lm.name())
	}
	if len(prompt) == 0 {
		return 0, nil, fmt.Errorf("%s: an empty prompt; start it with a token such as bos", b.lm.name())
	}
	if !b.Fits(len(prompt), maxNew) {
		return 0, nil, fmt.Errorf("%s: a prompt of %d tokens and %d new tokens in rows of %d slots and a context of %d: %w", b.lm.name(), len(prompt), maxNew, b.cap, b.lm.Context, ErrNoRoom)
	}
	row = slices.Index(b.live, false)
	if row < 0 {
		return 0, nil, fmt.Errorf("%s: %d rows: %w", b.lm.name(), b.rows, ErrBatchFull)
	}
	st, err := b.lm.NewStepper(CausalOptions{MaxNewTokens: maxNew, NoSlidingWindow: true})
	if err != nil {
		return 0, nil, err
	}
	defer st.Close()
	out, err := st.Step([][]int{prompt})
	if err != nil {
		return 0, nil, err
	}
	if !st.onCache || st.kv == nil {
		return 0, nil, fmt.Errorf("%s: the prefill did not run through the cache", b.lm.name())
	}
	logits = slices.Clone(out[0])
	p := st.kvKey.prompt
	// Copy slots [0, P′) of the prefill's caches into the row's.
	c, src := b.cap+1, st.kv.caches.Tensors
	for i, t := range b.caches.Tensors {
		shape := t.Shape()
		heads, d, sc := shape[0]/b.rows, shape[2], src[i].Shape()[1]
		switch dst := t.Data().(type) {
		case []float32:
			from := src[i].Data().([]float32)
			for h := 0; h < heads; h++ {
				copy(dst[((row*heads+h)*c)*d:][:p*d], from[h*sc*d:][:p*d])
			}
		case []float64:
			from := src[i].Data().([]float64)
			for h := 0; h < heads; h++ {
				copy(dst[((row*heads+h)*c)*d:][:p*d], from[h*sc*d:][:p*d])
			}
		default:
			return 0, nil, fmt.Errorf("%s: a cache of %v; want float32 or float64", b.lm.name(), t.Dtype())
		}
	}
	b.live[row], b.pads[row], b.next[row] = true, st.pads[0], p
	occ := b.occupied[row*c : (row+1)*c]
	for j := range occ {
		occ[j] = j >= st.pads[0] && j < p
	}
	return row, logits, nil
}

// Step runs one token for every row r with tokens[r] ≥ 0 (len(tokens) is
// Rows; −1 skips a row) and returns the logits (n, V) of the token after
// each of the first n rows, n ≥ the last row stepped (the pass runs the
// smallest power of two of rows that holds them, at most Rows): a skipped
// row's are meaningless. They are valid until the next Step or Join.
func (b *CausalBatch) Step(tokens []int) ([][]float64, error) {
	if b.failed {
		return nil, fmt.Errorf("%s: the running batch failed earlier; close it", b.lm.name())
	}
	if len(tokens) != b.rows {
		return nil, fmt.Errorf("%s: a step of %d tokens for %d rows", b.lm.name(), len(tokens), b.rows)
	}
	// The smallest power of two of rows, or R, that holds every row
	// stepped: the single-token pass costs in proportion to its rows.
	hi := 0
	for r, tok := range tokens {
		if tok >= 0 {
			hi = r + 1
		}
	}
	if hi == 0 {
		return nil, fmt.Errorf("%s: a step of no rows", b.lm.name())
	}
	n := 1
	for n < hi {
		n *= 2
	}
	n = min(n, b.rows)
	g, err := b.graph(n)
	if err != nil {
		return nil, err
	}
	c := b.cap + 1
	for r, tok := range tokens[:n] {
		if tok < 0 {
			g.ids[r], g.pos[r], g.slot[r] = 0, 0, b.cap // the spare slot
			continue
		}
		switch {
		case !b.live[r]:
			return nil, fmt.Errorf("%s: row %d holds no sequence", b.lm.name(), r)
		case b.next[r] >= b.cap:
			return nil, fmt.Errorf("%s: row %d filled its %d slots", b.lm.name(), r, b.cap)
		}
		s := b.next[r]
		g.ids[r], g.pos[r], g.slot[r] = tok, s-b.pads[r], s
		b.occupied[r*c+s] = true
		b.next[r]++
	}
	setMask(b.mask, b.occupied)
	out, err := g.Run()
	if err != nil {
		b.failed = true
		return nil, fmt.Errorf("%s: %w", b.lm.name(), err)
	}
	return out, nil
}

// Leave frees row r for another sequence.
func (b *CausalBatch) Leave(r int) {
	if r < 0 || r >= b.rows {
		return
	}
	c := b.cap + 1
	b.live[r] = false
	clear(b.occupied[r*c : (r+1)*c])
}

// Close releases the batch's graphs; it is done.
func (b *CausalBatch) Close() {
	for n, g := range b.one {
		g.Close()
		delete(b.one, n)
	}
}

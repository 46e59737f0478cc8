package seq2seq

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// The rounding of decoding shapes, so that calls (Translate's batches) of
// nearby lengths share graphs: sources are padded to a multiple of
// sourceBucket positions (at most max_len), and the decoder's KV cache
// holds a multiple of capacityBucket steps. Padded source positions are
// masked out of the encoder and of cross-attention.
const (
	sourceBucket   = 8
	capacityBucket = 16
)

// encKey is the shape of an encoder graph: B sources of Ts′ positions.
type encKey struct{ batch, ts int }

// stepKey is the shape of a cached decoder step: R = B·K rows reading
// sources of Ts′ positions, with a cache of C slots.
type stepKey struct{ rows, ts, capacity int }

// graphs are the compiled decoding graphs a model keeps between calls.
type graphs struct {
	encoder layers.GraphCache[encKey, *encoderGraph]
	step    layers.GraphCache[stepKey, *cachedStep]
}

// ReleaseGraphs frees the compiled graphs, and the buffers bound into them
// (KV caches, projected sources), that Greedy, BeamSearch and Translate
// keep between calls (at most layers.DefaultMaxGraphs of each kind, of at
// most layers.DefaultMaxBytes each). The model stays usable: the next call
// compiles what it needs. Changing the weights needs no release: the
// graphs read the parameter tensors, which loading and training update in
// place. It is safe to call while other goroutines decode: graphs in use
// are theirs until the call that took them is done.
func (m *Model) ReleaseGraphs() {
	m.graphs.encoder.Reset()
	m.graphs.step.Reset()
}

// encoderGraph is a compiled encoder over B sources of Ts′ positions with
// every decoder layer's projection of its output.
type encoderGraph struct {
	vm    *layers.Machine
	src   []int            // (B, Ts′) token ids, right-padded
	mask  *tensor.Dense    // (B, Ts′), 1 for source tokens
	outs  []*gorgonia.Node // memory (B, Ts′, D), then per decoder layer K and V, (B·h, Ts′, d_head)
	batch int
	ts    int
	bytes int64 // the estimate the model's cache is told
}

// Close releases the graph's machine.
func (e *encoderGraph) Close() { e.vm.Close() }

func (m *Model) newEncoderGraph(k encKey) (*encoderGraph, error) {
	g := m.Store.NewGraph()
	src, mask := g.IntInput("input_ids", k.batch, k.ts), g.Input("attention_mask", k.batch, k.ts)
	memory, err := m.Encode(g, src, mask)
	if err != nil {
		return nil, err
	}
	cross, err := m.Decoder.ProjectMemory(g, memory)
	if err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	// The memory feeds the projections, so it would live in the store's
	// pool, which the machine of another call may overwrite before this
	// call copies it out (BeamSearch without the cache): read, it keeps
	// memory of its own (layers.Machine).
	var read gorgonia.Value
	gorgonia.Read(memory, &read)
	e := &encoderGraph{src: layers.Ints(src), mask: mask.Value().(*tensor.Dense), outs: []*gorgonia.Node{memory},
		batch: k.batch, ts: k.ts, bytes: m.Config.DecodeBytes(k.batch, 0, k.ts, 0)}
	for _, kv := range cross {
		e.outs = append(e.outs, kv.K, kv.V)
	}
	if e.vm, err = g.Machine(); err != nil {
		return nil, err
	}
	return e, nil
}

// encode runs the encoder over the sources (token ids without eos), padded
// to Ts′ positions, and returns its graph, whose outputs hold until it runs
// again: copy them out (repeat) and give it back with
// m.graphs.encoder.Put(e.key(), e, e.bytes).
func (m *Model) encode(srcs [][]int) (*encoderGraph, error) {
	c := m.Config
	if len(srcs) == 0 {
		return nil, fmt.Errorf("seq2seq decode: no sources")
	}
	ts := 0
	for i, s := range srcs {
		if len(s) == 0 {
			return nil, fmt.Errorf("seq2seq decode: source %d is empty", i)
		}
		if SourceLen(len(s)) > c.MaxLen {
			return nil, fmt.Errorf("seq2seq decode: source %d has %d tokens; with eos that is more than max_len %d: truncate it", i, len(s), c.MaxLen)
		}
		ts = max(ts, SourceLen(len(s)))
	}
	b := len(srcs)
	ts = min(layers.RoundUp(ts, sourceBucket), c.MaxLen)
	batch, err := c.NewBatch(srcs, make([][]int, b), b, ts, 1)
	if err != nil {
		return nil, fmt.Errorf("seq2seq decode: %w", err)
	}
	k := encKey{batch: b, ts: ts}
	e, err := m.graphs.encoder.Get(k, func() (*encoderGraph, error) { return m.newEncoderGraph(k) })
	if err != nil {
		return nil, err
	}
	copy(e.src, batch.Src)
	setMask(e.mask, batch.Src, c.PadTokenID)
	if err := e.vm.RunAll(); err != nil {
		e.Close()
		return nil, fmt.Errorf("seq2seq: encoder: %w", err)
	}
	return e, nil
}

func (e *encoderGraph) key() encKey { return encKey{batch: e.batch, ts: e.ts} }

// output is the value of output i of the last run: 0 the memory, then
// each decoder layer's cross-attention K and V.
func (e *encoderGraph) output(i int) (*tensor.Dense, error) {
	d, ok := e.outs[i].Value().(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("seq2seq: encoder output %s is %T", e.outs[i].Name(), e.outs[i].Value())
	}
	return d, nil
}

// repeatRows views src as b groups of equal rows along its first axis and
// writes each group k times in a row into dst, whose first axis is k times
// longer.
func repeatRows(dst, src *tensor.Dense, b, k int) {
	group := src.Size() / b
	for i := 0; i < b; i++ {
		for j := 0; j < k; j++ {
			copyBlock(dst, src, (i*k+j)*group, i*group, group)
		}
	}
}

// repeated is repeatRows into a new tensor.
func repeated(src *tensor.Dense, b, k int) *tensor.Dense {
	shape := src.Shape().Clone()
	shape[0] *= k
	out := tensor.New(tensor.WithShape(shape...), tensor.Of(src.Dtype()))
	repeatRows(out, src, b, k)
	return out
}

// copyBlock copies n values of src from offset so to dst at offset do.
func copyBlock(dst, src *tensor.Dense, do, so, n int) {
	switch d := dst.Data().(type) {
	case []float32:
		copy(d[do:do+n], src.Data().([]float32)[so:so+n])
	case []float64:
		copy(d[do:do+n], src.Data().([]float64)[so:so+n])
	}
}

package seq2seq

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// encoded is a batch of sources run through the encoder once, with each
// source's rows repeated for its beams: R = B·K rows.
type encoded struct {
	rows, ts int
	memory   *tensor.Dense   // (R, Ts, D)
	memMask  *tensor.Dense   // (R, Ts)
	cross    []*tensor.Dense // per layer K and V, (R·h, Ts, d_head) each
}

// encodeSources runs the encoder over the sources (token ids without eos)
// and repeats every source's outputs beams times.
func (m *Model) encodeSources(srcs [][]int, beams int) (*encoded, error) {
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
	batch, err := c.NewBatch(srcs, make([][]int, b), b, ts, 1)
	if err != nil {
		return nil, fmt.Errorf("seq2seq decode: %w", err)
	}
	g := m.Store.NewGraph()
	src, mask := g.IntInput("input_ids", b, ts), g.Input("attention_mask", b, ts)
	copy(src.Value().Data().([]int), batch.Src)
	setMask(mask.Value().(*tensor.Dense), batch.Src, c.PadTokenID)
	memory, err := m.Encode(g, src, mask)
	if err != nil {
		return nil, err
	}
	cross, err := m.Decoder.ProjectMemory(g, memory)
	if err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	outs := []*gorgonia.Node{memory}
	for _, kv := range cross {
		outs = append(outs, kv.K, kv.V)
	}
	vals := make([]gorgonia.Value, len(outs))
	for i, n := range outs {
		gorgonia.Read(n, &vals[i])
	}
	vm, err := g.Machine()
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, fmt.Errorf("seq2seq: encoder: %w", err)
	}
	e := &encoded{rows: b * beams, ts: ts}
	e.memory = repeatRows(vals[0].(*tensor.Dense), b, beams)
	e.memMask = repeatRows(mask.Value().(*tensor.Dense), b, beams)
	for _, v := range vals[1:] {
		e.cross = append(e.cross, repeatRows(v.(*tensor.Dense), b, beams))
	}
	return e, nil
}

// repeatRows views t as b groups of equal rows along its first axis and
// returns a new tensor with each group repeated k times in a row.
func repeatRows(t *tensor.Dense, b, k int) *tensor.Dense {
	shape := t.Shape().Clone()
	group := t.Size() / b
	shape[0] *= k
	out := tensor.New(tensor.WithShape(shape...), tensor.Of(t.Dtype()))
	for i := 0; i < b; i++ {
		for j := 0; j < k; j++ {
			copyBlock(out, t, (i*k+j)*group, i*group, group)
		}
	}
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

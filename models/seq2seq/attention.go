package seq2seq

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// CrossAttention runs one pair — a source (token ids without eos) and its
// translation (without bos and eos) — through the model and returns every
// decoder layer's cross-attention probabilities, indexed
// [layer][head][target position][source position]: (L, h, 1+|tgt|, |src|+1).
// Target positions are bos, tgt…; source positions are src…, eos. Row i is
// what the decoder looked at to predict target token i (or eos, in the last
// row). Safe for concurrent use by multiple goroutines: each call builds and
// runs a graph of its own.
func (m *Model) CrossAttention(src, tgt []int) ([][][][]float64, error) {
	c := m.Config
	if len(src) == 0 {
		return nil, fmt.Errorf("seq2seq attention: the source is empty")
	}
	if SourceLen(len(src)) > c.MaxLen || TargetLen(len(tgt)) > c.MaxLen {
		return nil, fmt.Errorf("seq2seq attention: source %d or target %d tokens exceed max_len %d", len(src), len(tgt), c.MaxLen)
	}
	ts, tt := SourceLen(len(src)), TargetLen(len(tgt))
	b, err := c.NewBatch([][]int{src}, [][]int{tgt}, 1, ts, tt)
	if err != nil {
		return nil, fmt.Errorf("seq2seq attention: %w", err)
	}
	g := m.Store.NewGraph()
	f := m.NewFeed(g, 1, ts, tt)
	if err := f.Load(b); err != nil {
		return nil, err
	}
	memory, err := m.Encode(g, f.Src, f.SrcMask)
	if err != nil {
		return nil, err
	}
	y, err := m.embed(g, m.TgtEmbed, f.TgtIn, "target")
	if err != nil {
		return nil, err
	}
	_, probs, err := m.Decoder.ForwardWithProbs(g, y, f.TgtMask, memory, f.SrcMask)
	if err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	vals := make([]gorgonia.Value, len(probs))
	for i, p := range probs {
		gorgonia.Read(p, &vals[i])
	}
	vm, err := g.Machine()
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, fmt.Errorf("seq2seq attention: %w", err)
	}
	h := c.NumHeads
	out := make([][][][]float64, len(vals))
	for l, v := range vals {
		d, ok := v.(*tensor.Dense)
		if !ok {
			return nil, fmt.Errorf("seq2seq attention: probabilities are %T", v)
		}
		out[l] = make([][][]float64, h)
		for k := 0; k < h; k++ {
			out[l][k] = make([][]float64, tt)
			for i := 0; i < tt; i++ {
				row := make([]float64, ts)
				off := (k*tt + i) * ts
				switch x := d.Data().(type) {
				case []float32:
					for j := range row {
						row[j] = float64(x[off+j])
					}
				case []float64:
					copy(row, x[off:off+ts])
				}
				out[l][k][i] = row
			}
		}
	}
	return out, nil
}

package bert

import (
	"fmt"

	"github.com/d73a19ff/zoo/layers"
)

// HiddenStates runs one sequence — token ids (T), [CLS] and [SEP]
// included, and their token type ids (T), or nil for all 0 — through the
// backbone and returns every layer's hidden states, indexed
// [k][position][feature]: (L+1, T, D), transformers' hidden_states
// (output_hidden_states=True). Entry 0 is the embeddings' output (the
// encoder's input) and entry k the output of layer k, so entry L is
// last_hidden_state, Hidden's output bit for bit (BERT is post-norm: no
// final norm follows the last layer). Safe for concurrent use by
// multiple goroutines: each call builds and runs a graph of its own.
func (m *Model) HiddenStates(ids, typeIDs []int) ([][][]float64, error) {
	var types [][]int
	if typeIDs != nil {
		types = [][]int{typeIDs}
	}
	out, err := m.hiddenStates([][]int{ids}, types)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// hiddenStates is HiddenStates for a batch of sequences, right-padded to
// the longest and masked: [row][k][T][D] with T the longest length;
// padding positions hold what the model computed for them.
func (m *Model) hiddenStates(ids, typeIDs [][]int) ([][][][]float64, error) {
	g := m.Store.NewGraph()
	b, err := newBatch(m.Config, ids, typeIDs)
	if err != nil {
		return nil, fmt.Errorf("bert hidden states: %w", err)
	}
	in, err := b.inputs(g)
	if err != nil {
		return nil, fmt.Errorf("bert hidden states: %w", err)
	}
	h, err := m.embed(g, in)
	if err != nil {
		return nil, err
	}
	enc, err := m.Encoder.ForwardOutputs(g, h, in.Mask, layers.Outputs{HiddenStates: true})
	if err != nil {
		return nil, fmt.Errorf("bert hidden states: %w", err)
	}
	vals, err := g.Evaluate(m.Config.outerStates(enc.Hidden)...)
	if err != nil {
		return nil, fmt.Errorf("bert hidden states: %w", err)
	}
	d, t := m.Config.HiddenSize, b.t
	out := make([][][][]float64, len(ids))
	for r := range out {
		out[r] = make([][][]float64, len(vals))
	}
	for k, x := range vals { // (B, T, D)
		for r := range ids {
			out[r][k] = make([][]float64, t)
			for i := range t {
				off := (r*t + i) * d
				out[r][k][i] = x[off : off+d : off+d]
			}
		}
	}
	return out, nil
}

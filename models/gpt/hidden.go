package gpt

import (
	"fmt"

	"github.com/d73a19ff/zoo/layers"
)

// HiddenStates runs one sequence of token ids (T, at most n_positions)
// through the model without dropout and returns its hidden states,
// indexed [k][position][feature]: (n_layer+1, T, n_embd), transformers'
// GPT2Model hidden_states (output_hidden_states=True). Entry 0 is the
// embeddings' output (wte + wpe), entry k for 0 < k < n_layer the output
// of block k, and entry n_layer the output of the last block after the
// final LayerNorm (transformer.ln_f): modeling_gpt2.py appends the state
// before each block and then, after ln_f, the last one, so the last
// block's output before ln_f is not among them. Entry n_layer is Hidden's
// output (last_hidden_state), bit for bit. Safe for concurrent use by
// multiple goroutines: each call builds and runs a graph of its own.
func (m *Model) HiddenStates(ids []int) ([][][]float64, error) {
	vals, err := m.outputs(ids, layers.Outputs{HiddenStates: true}, "hidden states")
	if err != nil {
		return nil, err
	}
	t, d := len(ids), m.Config.NEmbd
	out := make([][][]float64, len(vals))
	for k, x := range vals { // (1, T, D)
		out[k] = make([][]float64, t)
		for i := range t {
			out[k][i] = x[i*d : (i+1)*d : (i+1)*d]
		}
	}
	return out, nil
}

// Attentions runs one sequence of token ids (T) through the model without
// dropout and returns every block's attention probabilities, indexed
// [layer][head][query][key]: (n_layer, n_head, T, T), transformers'
// attentions (output_attentions=True), each row a softmax over the keys
// up to the query (causal: 0 above the diagonal). Safe for concurrent use
// by multiple goroutines: each call builds and runs a graph of its own.
func (m *Model) Attentions(ids []int) ([][][][]float64, error) {
	vals, err := m.outputs(ids, layers.Outputs{Attentions: true}, "attentions")
	if err != nil {
		return nil, err
	}
	t, h := len(ids), m.Config.NHead
	out := make([][][][]float64, len(vals))
	for l, x := range vals { // (1·h, T, T)
		out[l] = make([][][]float64, h)
		for k := range h {
			out[l][k] = make([][]float64, t)
			for i := range t {
				off := (k*t + i) * t
				out[l][k][i] = x[off : off+t : off+t]
			}
		}
	}
	return out, nil
}

// outputs runs ids (T) as a batch of one and returns the values o asks
// for, flat: the hidden states (the last after ln_f) or the attentions.
func (m *Model) outputs(ids []int, o layers.Outputs, what string) ([][]float64, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("gpt %s: no tokens", what)
	}
	g := m.Store.NewGraph()
	in := Inputs{IDs: g.IntInput("input_ids", 1, len(ids))}
	copy(in.IDs.Value().Data().([]int), ids)
	h, err := m.embed(g, in)
	if err != nil {
		return nil, err
	}
	out, err := m.H.ForwardOutputs(g, h, nil, o)
	if err != nil {
		return nil, fmt.Errorf("gpt %s: %w", what, err)
	}
	nodes := out.Attentions
	if o.HiddenStates {
		// GPT2Model's last hidden state is after ln_f (the stack's Last),
		// not the last block's output.
		nodes = append(out.Hidden[:len(out.Hidden)-1:len(out.Hidden)-1], out.Last)
	}
	vals, err := g.Evaluate(nodes...)
	if err != nil {
		return nil, fmt.Errorf("gpt %s: %w", what, err)
	}
	return vals, nil
}

package seq2seq

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
)

// PairOutputs are the per-layer outputs of one source–target pair, as
// transformers' MarianModel returns them (Seq2SeqModelOutput's
// encoder_hidden_states, decoder_hidden_states, encoder_attentions,
// decoder_attentions and cross_attentions), without the batch axis. Source
// positions are src…, eos (Ts = |src|+1); target positions are the
// decoder's inputs bos, tgt… (Tt = |tgt|+1), as in CrossAttention. A field
// not asked for is nil.
type PairOutputs struct {
	// EncoderHiddenStates (num_encoder_layers+1, Ts, d_model) and
	// DecoderHiddenStates (num_decoder_layers+1, Tt, d_model): entry 0 is
	// the embeddings' output (√d·E[ids] + positions) and entry k the output
	// of layer k. The last entry is the stack's output (the encoder's
	// memory, the decoder's last_hidden_state, which the LM head reads):
	// Marian is post-norm, so it is the last layer's output; a pre-norm
	// model's (NormFirst) is after its final LayerNorm, as transformers'
	// MBart appends it.
	EncoderHiddenStates, DecoderHiddenStates [][][]float64
	// EncoderAttentions (num_encoder_layers, h, Ts, Ts) and
	// DecoderAttentions (num_decoder_layers, h, Tt, Tt, causal) are each
	// layer's self-attention probabilities, [layer][head][query][key].
	EncoderAttentions, DecoderAttentions [][][][]float64
	// CrossAttentions (num_decoder_layers, h, Tt, Ts) are each decoder
	// layer's attention over the encoder output (see CrossAttention).
	CrossAttentions [][][][]float64
}

// Outputs runs one pair — a source (token ids without eos) and its
// translation (without bos and eos) — through the model without dropout
// and returns what o asks for (see PairOutputs): o.HiddenStates both
// stacks' hidden states (transformers' output_hidden_states=True),
// o.Attentions both stacks' self-attentions and o.CrossAttentions the
// decoder's cross-attentions (transformers' output_attentions=True gives
// all three). Safe for concurrent use by multiple goroutines: each call
// builds and runs a graph of its own.
func (m *Model) Outputs(src, tgt []int, o layers.Outputs) (PairOutputs, error) {
	c := m.Config
	if len(src) == 0 {
		return PairOutputs{}, fmt.Errorf("seq2seq outputs: the source is empty")
	}
	ts, tt := SourceLen(len(src)), TargetLen(len(tgt))
	if ts > c.MaxLen || tt > c.MaxLen {
		return PairOutputs{}, fmt.Errorf("seq2seq outputs: source %d or target %d tokens exceed max_len %d", len(src), len(tgt), c.MaxLen)
	}
	b, err := c.NewBatch([][]int{src}, [][]int{tgt}, 1, ts, tt)
	if err != nil {
		return PairOutputs{}, fmt.Errorf("seq2seq outputs: %w", err)
	}
	g := m.Store.NewGraph()
	f := m.NewFeed(g, 1, ts, tt)
	if err := f.Load(b); err != nil {
		return PairOutputs{}, err
	}
	x, err := m.embed(g, m.SrcEmbed, f.Src, "source")
	if err != nil {
		return PairOutputs{}, err
	}
	enc, err := m.Encoder.ForwardOutputs(g, x, f.SrcMask, layers.Outputs{HiddenStates: o.HiddenStates, Attentions: o.Attentions})
	if err != nil {
		return PairOutputs{}, fmt.Errorf("seq2seq outputs: %w", err)
	}
	y, err := m.embed(g, m.TgtEmbed, f.TgtIn, "target")
	if err != nil {
		return PairOutputs{}, err
	}
	dec, err := m.Decoder.ForwardOutputs(g, y, f.TgtMask, enc.Last, f.SrcMask, o)
	if err != nil {
		return PairOutputs{}, fmt.Errorf("seq2seq outputs: %w", err)
	}
	// The last hidden state is the stack's output, after the final norm
	// of a pre-norm stack.
	if o.HiddenStates {
		enc.Hidden[len(enc.Hidden)-1] = enc.Last
		dec.Hidden[len(dec.Hidden)-1] = dec.Last
	}
	groups := [][]*gorgonia.Node{enc.Hidden, dec.Hidden, enc.Attentions, dec.Attentions, dec.CrossAttentions}
	var nodes []*gorgonia.Node
	for _, n := range groups {
		nodes = append(nodes, n...)
	}
	vals, err := g.Evaluate(nodes...)
	if err != nil {
		return PairOutputs{}, fmt.Errorf("seq2seq outputs: %w", err)
	}
	take := func(n int) [][]float64 {
		v := vals[:n:n]
		vals = vals[n:]
		return v
	}
	h := c.NumHeads
	var out PairOutputs
	out.EncoderHiddenStates = states(take(len(enc.Hidden)), ts, c.DModel)
	out.DecoderHiddenStates = states(take(len(dec.Hidden)), tt, c.DModel)
	out.EncoderAttentions = probabilities(take(len(enc.Attentions)), h, ts, ts)
	out.DecoderAttentions = probabilities(take(len(dec.Attentions)), h, tt, tt)
	out.CrossAttentions = probabilities(take(len(dec.CrossAttentions)), h, tt, ts)
	return out, nil
}

// states views flat (1, T, D) values as [k][position][feature]; none is nil.
func states(vals [][]float64, t, d int) [][][]float64 {
	if len(vals) == 0 {
		return nil
	}
	out := make([][][]float64, len(vals))
	for k, x := range vals {
		out[k] = make([][]float64, t)
		for i := range t {
			out[k][i] = x[i*d : (i+1)*d : (i+1)*d]
		}
	}
	return out
}

// probabilities views flat (1·h, Tq, Tk) values as [layer][head][query][key];
// none is nil.
func probabilities(vals [][]float64, h, tq, tk int) [][][][]float64 {
	if len(vals) == 0 {
		return nil
	}
	out := make([][][][]float64, len(vals))
	for l, x := range vals {
		out[l] = make([][][]float64, h)
		for k := range h {
			out[l][k] = make([][]float64, tq)
			for i := range tq {
				off := (k*tq + i) * tk
				out[l][k][i] = x[off : off+tk : off+tk]
			}
		}
	}
	return out
}

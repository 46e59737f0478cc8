package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/ops"
)

// CrossKV are one cross-attention's keys and values, already projected and
// split into heads, (B·h, Tk, d_head) each: computed once per source by
// ProjectKV and then read by every decoding step.
type CrossKV struct{ K, V *gorgonia.Node }

// ProjectKV projects the encoder output memory (B, Tk, D) to the heads k, v
// (B·kvh, Tk, d_head) of a (non-fused) cross-attention without Positions.
func (a *MultiHeadAttention) ProjectKV(g *Graph, memory *gorgonia.Node) (CrossKV, error) {
	if a.Key == nil {
		return CrossKV{}, fmt.Errorf("attention %s: a fused projection has no separate keys and values", a.name())
	}
	if a.Positions != nil {
		return CrossKV{}, fmt.Errorf("attention %s: projected keys and values take no position encoder", a.name())
	}
	if memory.Dims() != 3 || memory.Shape()[2] != a.Dim {
		return CrossKV{}, fmt.Errorf("attention %s: memory %v must be (B, T, %d)", a.name(), memory.Shape(), a.Dim)
	}
	var kv [2]*gorgonia.Node
	for i, l := range []*Linear{a.Key, a.Value} {
		y, err := l.Forward(g, memory)
		if err != nil {
			return CrossKV{}, err
		}
		if kv[i], err = ops.SplitHeads(y, a.KVHeads); err != nil {
			return CrossKV{}, fmt.Errorf("attention %s: %w", a.name(), err)
		}
	}
	return CrossKV{K: kv[0], V: kv[1]}, nil
}

// ForwardKV attends from queries x (B, Tq, D) to projected keys and values
// kv (B·kvh, Tk, d_head) with an optional key-padding mask (B, Tk), and
// returns (B, Tq, D) and the probabilities (B·h, Tq, Tk).
func (a *MultiHeadAttention) ForwardKV(g *Graph, x *gorgonia.Node, kv CrossKV, mask *gorgonia.Node) (out, probs *gorgonia.Node, err error) {
	return a.forwardKV(g, x, kv, mask, true)
}

// forwardKV is ForwardKV; without withProbs the attention may run fused and
// probs may be nil (see attend).
func (a *MultiHeadAttention) forwardKV(g *Graph, x *gorgonia.Node, kv CrossKV, mask *gorgonia.Node, withProbs bool) (out, probs *gorgonia.Node, err error) {
	if x.Dims() != 3 || x.Shape()[2] != a.Dim {
		return nil, nil, fmt.Errorf("attention %s: queries %v must be (B, T, %d)", a.name(), x.Shape(), a.Dim)
	}
	if a.Positions != nil {
		return nil, nil, fmt.Errorf("attention %s: projected keys and values take no position encoder", a.name())
	}
	want := tensor.Shape{x.Shape()[0] * a.KVHeads, kv.K.Shape()[1], a.HeadDim}
	if !kv.K.Shape().Eq(want) || !kv.V.Shape().Eq(want) {
		return nil, nil, fmt.Errorf("attention %s: keys %v and values %v must be %v", a.name(), kv.K.Shape(), kv.V.Shape(), want)
	}
	if mask != nil && !mask.Shape().Eq(tensor.Shape{x.Shape()[0], want[1]}) {
		return nil, nil, fmt.Errorf("attention %s: mask %v must be (B, Tk) = (%d, %d)", a.name(), mask.Shape(), x.Shape()[0], want[1])
	}
	y, err := a.Query.Forward(g, x)
	if err != nil {
		return nil, nil, err
	}
	q, err := ops.SplitHeads(y, a.Heads)
	if err != nil {
		return nil, nil, fmt.Errorf("attention %s: %w", a.name(), err)
	}
	return a.attend(g, q, kv.K, kv.V, mask, NoCausal, withProbs)
}

// DecoderState is what a cached decoding step reads besides its tokens: one
// self-attention KV cache and one projected cross-attention per layer, and
// the masks of the occupied cache slots (B, C) and of the source (B, Tm).
type DecoderState struct {
	Self    []*KVCache
	Cross   []CrossKV
	Mask    *gorgonia.Node // (B, C), 1 for occupied cache slots
	MemMask *gorgonia.Node // (B, Tm), 1 for source tokens; nil when none is padded
}

// ProjectMemory computes every layer's cross-attention keys and values from
// the encoder output memory (B, Tm, D).
func (d *Decoder) ProjectMemory(g *Graph, memory *gorgonia.Node) ([]CrossKV, error) {
	out := make([]CrossKV, len(d.Layers))
	for i, b := range d.Layers {
		kv, err := b.CrossAttn.ProjectKV(g, memory)
		if err != nil {
			return nil, fmt.Errorf("decoder layer %d: %w", i, err)
		}
		out[i] = kv
	}
	return out, nil
}

// ForwardCached runs the tokens x (B, T, D) through the stack with the
// state's caches (see MultiHeadAttention.ForwardCached) and returns
// (B, T, D).
func (d *Decoder) ForwardCached(g *Graph, x *gorgonia.Node, s DecoderState) (*gorgonia.Node, error) {
	if len(s.Self) != len(d.Layers) || len(s.Cross) != len(d.Layers) {
		return nil, fmt.Errorf("decoder: %d KV caches and %d cross-attentions for %d layers", len(s.Self), len(s.Cross), len(d.Layers))
	}
	var err error
	for i, b := range d.Layers {
		self := func(in *gorgonia.Node) (*gorgonia.Node, error) {
			return b.SelfAttn.ForwardCached(g, in, s.Mask, s.Self[i])
		}
		cross := func(in *gorgonia.Node) (*gorgonia.Node, *gorgonia.Node, error) {
			return b.CrossAttn.forwardKV(g, in, s.Cross[i], s.MemMask, false)
		}
		if x, _, err = b.forward(g, x, self, cross); err != nil {
			return nil, fmt.Errorf("decoder layer %d: %w", i, err)
		}
	}
	if d.Norm != nil {
		return d.Norm.Forward(g, x)
	}
	return x, nil
}

// ForwardWithProbs is Forward that also returns each layer's
// cross-attention probabilities, (B·h, T, Tm) laid out as (B, h, T, Tm):
// the attention maps of a translation.
func (d *Decoder) ForwardWithProbs(g *Graph, x, mask, memory, memMask *gorgonia.Node) (*gorgonia.Node, []*gorgonia.Node, error) {
	probs := make([]*gorgonia.Node, len(d.Layers))
	var err error
	for i, b := range d.Layers {
		if x, probs[i], err = b.ForwardWithProbs(g, x, mask, memory, memMask); err != nil {
			return nil, nil, fmt.Errorf("decoder layer %d: %w", i, err)
		}
	}
	if d.Norm != nil {
		x, err = d.Norm.Forward(g, x)
	}
	return x, probs, err
}

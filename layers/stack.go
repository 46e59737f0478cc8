package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"
)

// Encoder is a stack of EncoderBlocks ("layers.0", "layers.1", …); a
// pre-norm stack ends with its own norm ("layer_norm"), a LayerNorm unless
// BlockConfig.NewNorm builds another.
type Encoder struct {
	Layers []*EncoderBlock
	Norm   Normalizer // the final norm; nil for post-norm
}

// NewEncoder creates n blocks in scope s.
func NewEncoder(s Scope, c BlockConfig, n int) (*Encoder, error) {
	if n <= 0 {
		return nil, fmt.Errorf("encoder %s: %d layers; need at least one", s.prefix, n)
	}
	names := c.Names.orDefault()
	e := &Encoder{}
	for i := 0; i < n; i++ {
		b, err := NewEncoderBlock(s.Sub(names.Layers).Index(i), c)
		if err != nil {
			return nil, err
		}
		e.Layers = append(e.Layers, b)
	}
	var err error
	if e.Norm, err = stackNorm(s, c, names); err != nil {
		return nil, err
	}
	return e, nil
}

// stackNorm is a pre-norm stack's final norm (see BlockConfig.NewNorm),
// nil for post-norm.
func stackNorm(s Scope, c BlockConfig, n BlockNames) (Normalizer, error) {
	if c.Norm != PreNorm {
		return nil, nil
	}
	return c.newNorm(s.Sub(n.StackNorm))
}

// Forward maps x (B, T, D) with an optional key-padding mask (B, T) to
// (B, T, D).
func (e *Encoder) Forward(g *Graph, x, mask *gorgonia.Node) (*gorgonia.Node, error) {
	return e.stack(g, x, func(_ int, b *EncoderBlock, x *gorgonia.Node) (*gorgonia.Node, error) {
		return b.Forward(g, x, mask)
	})
}

// ForwardAt is Forward with the positions (B, T) of x's tokens, an int
// node, given to every self-attention's position encoder (see
// MultiHeadAttention.ForwardAt): left-padded rows count from their first
// token. nil positions are Forward's 0…T−1; without position encoders the
// graph is Forward's.
func (e *Encoder) ForwardAt(g *Graph, x, mask, positions *gorgonia.Node) (*gorgonia.Node, error) {
	return e.stack(g, x, func(_ int, b *EncoderBlock, x *gorgonia.Node) (*gorgonia.Node, error) {
		return b.ForwardAt(g, x, mask, positions)
	})
}

// ForwardWithProbs is Forward that also returns each layer's
// self-attention probabilities, (B·h, T, T) laid out as (B, h, T, T),
// before dropout. Read them with gorgonia.Read (see
// MultiHeadAttention.ForwardWithProbs).
func (e *Encoder) ForwardWithProbs(g *Graph, x, mask *gorgonia.Node) (*gorgonia.Node, []*gorgonia.Node, error) {
	probs := make([]*gorgonia.Node, len(e.Layers))
	x, err := e.stack(g, x, func(i int, b *EncoderBlock, x *gorgonia.Node) (out *gorgonia.Node, err error) {
		out, probs[i], err = b.ForwardWithProbs(g, x, mask)
		return out, err
	})
	if err != nil {
		return nil, nil, err
	}
	return x, probs, nil
}

// Outputs picks what Encoder.ForwardOutputs returns besides the last
// hidden state: Hugging Face's output_hidden_states and output_attentions.
type Outputs struct {
	HiddenStates bool // every layer's hidden state (EncoderOutput.Hidden, DecoderOutput.Hidden)
	Attentions   bool // every layer's self-attention probabilities (EncoderOutput.Attentions, DecoderOutput.Attentions)
	// CrossAttentions asks a decoder for every layer's cross-attention
	// probabilities (DecoderOutput.CrossAttentions), Hugging Face's
	// cross_attentions; an encoder, which has none, refuses it.
	CrossAttentions bool
}

// EncoderOutput is what Encoder.ForwardOutputs returns, with Hugging
// Face's conventions (BaseModelOutput).
type EncoderOutput struct {
	// Last is the stack's output (B, T, D), after the final norm when
	// pre-norm: Forward's output, Hugging Face's last_hidden_state.
	Last *gorgonia.Node
	// Hidden, when Outputs.HiddenStates is set, holds L+1 nodes (B, T, D)
	// for L layers, Hugging Face's hidden_states: Hidden[0] is the stack's
	// input x (the embeddings' output) and Hidden[i] the output of layer
	// i. The final norm of a pre-norm stack is not applied to any of
	// them: Hidden[L] is Last before that norm (as transformers' ViT
	// returns them); for a post-norm stack Hidden[L] is Last itself.
	// Nil when not asked for.
	Hidden []*gorgonia.Node
	// Attentions, when Outputs.Attentions is set, holds L nodes, each
	// layer's self-attention probabilities before dropout, (B·h, T, T)
	// laid out as (B, h, T, T) (see ForwardWithProbs), Hugging Face's
	// attentions. Nil when not asked for.
	Attentions []*gorgonia.Node
}

// ForwardOutputs is Forward, x (B, T, D) with an optional key-padding mask
// (B, T), that also returns, as o asks, every layer's hidden state and
// self-attention probabilities (see EncoderOutput); read them with
// gorgonia.Read. Without o.Attentions the graph is Forward's and Last
// equals Forward's output bit for bit; with it each layer runs as
// ForwardWithProbs does (unfused attention) and Last equals
// ForwardWithProbs' output bit for bit (Forward's to rounding).
func (e *Encoder) ForwardOutputs(g *Graph, x, mask *gorgonia.Node, o Outputs) (EncoderOutput, error) {
	var out EncoderOutput
	if o.CrossAttentions {
		return out, fmt.Errorf("encoder: cross-attentions asked for, but an encoder has no cross-attention; ask a Decoder")
	}
	if o.HiddenStates {
		out.Hidden = make([]*gorgonia.Node, 0, len(e.Layers)+1)
		out.Hidden = append(out.Hidden, x)
	}
	if o.Attentions {
		out.Attentions = make([]*gorgonia.Node, len(e.Layers))
	}
	last, err := e.stack(g, x, func(i int, b *EncoderBlock, x *gorgonia.Node) (y *gorgonia.Node, err error) {
		if o.Attentions {
			y, out.Attentions[i], err = b.ForwardWithProbs(g, x, mask)
		} else {
			y, err = b.Forward(g, x, mask)
		}
		if err == nil && o.HiddenStates {
			out.Hidden = append(out.Hidden, y)
		}
		return y, err
	})
	if err != nil {
		return EncoderOutput{}, err
	}
	out.Last = last
	return out, nil
}

// ForwardFirst is Forward at the first position only: x (B, T, D), with
// an optional key-padding mask (B, T), to (B, 1, D), the first position's
// output (after the final norm when pre-norm). That output depends on
// the other positions only through the last block's attention keys and
// values, so the last block computes its query, output projection,
// residuals and feed-forward for the first position alone, which saves
// (T−1)/T of most of its work: a classifier that reads the class token
// (ViT's) needs no more. The result equals Forward's first position.
func (e *Encoder) ForwardFirst(g *Graph, x, mask *gorgonia.Node) (*gorgonia.Node, error) {
	return e.stack(g, x, func(i int, b *EncoderBlock, x *gorgonia.Node) (*gorgonia.Node, error) {
		if i == len(e.Layers)-1 {
			return b.ForwardFirst(g, x, mask)
		}
		return b.Forward(g, x, mask)
	})
}

// ForwardCached runs a causal stack through one KV cache per layer (see
// EncoderBlock.ForwardCached); with position encoders every cache gives
// the tokens' positions (KVCache.Positions).
func (e *Encoder) ForwardCached(g *Graph, x, mask *gorgonia.Node, caches []*KVCache) (*gorgonia.Node, error) {
	if len(caches) != len(e.Layers) {
		return nil, fmt.Errorf("encoder: %d KV caches for %d layers", len(caches), len(e.Layers))
	}
	return e.stack(g, x, func(i int, b *EncoderBlock, x *gorgonia.Node) (*gorgonia.Node, error) {
		return b.ForwardCached(g, x, mask, caches[i])
	})
}

// stack runs x through every layer, layer by layer, then through the final
// norm when there is one (pre-norm).
func (e *Encoder) stack(g *Graph, x *gorgonia.Node, layer func(i int, b *EncoderBlock, x *gorgonia.Node) (*gorgonia.Node, error)) (*gorgonia.Node, error) {
	var err error
	for i, b := range e.Layers {
		if x, err = layer(i, b, x); err != nil {
			return nil, fmt.Errorf("encoder layer %d: %w", i, err)
		}
	}
	if e.Norm != nil {
		return e.Norm.Forward(g, x)
	}
	return x, nil
}

// Decoder is a stack of DecoderBlocks, with a final norm when pre-norm (a
// LayerNorm unless BlockConfig.NewNorm builds another).
type Decoder struct {
	Layers []*DecoderBlock
	Norm   Normalizer // the final norm; nil for post-norm
}

// NewDecoder creates n blocks in scope s.
func NewDecoder(s Scope, c BlockConfig, n int) (*Decoder, error) {
	if n <= 0 {
		return nil, fmt.Errorf("decoder %s: %d layers; need at least one", s.prefix, n)
	}
	names := c.Names.orDefault()
	d := &Decoder{}
	for i := 0; i < n; i++ {
		b, err := NewDecoderBlock(s.Sub(names.Layers).Index(i), c)
		if err != nil {
			return nil, err
		}
		d.Layers = append(d.Layers, b)
	}
	var err error
	if d.Norm, err = stackNorm(s, c, names); err != nil {
		return nil, err
	}
	return d, nil
}

// Forward maps x (B, T, D) to (B, T, D) given the encoder output memory
// (B, Tm, D); mask (B, T) and memMask (B, Tm) are optional key-padding masks.
func (d *Decoder) Forward(g *Graph, x, mask, memory, memMask *gorgonia.Node) (*gorgonia.Node, error) {
	var err error
	for i, b := range d.Layers {
		if x, err = b.Forward(g, x, mask, memory, memMask); err != nil {
			return nil, fmt.Errorf("decoder layer %d: %w", i, err)
		}
	}
	if d.Norm != nil {
		return d.Norm.Forward(g, x)
	}
	return x, nil
}

// DecoderOutput is what Decoder.ForwardOutputs returns, with Hugging
// Face's conventions (BaseModelOutputWithPastAndCrossAttentions).
type DecoderOutput struct {
	// Last is the stack's output (B, T, D), after the final norm when
	// pre-norm: Forward's output, Hugging Face's last_hidden_state.
	Last *gorgonia.Node
	// Hidden, when Outputs.HiddenStates is set, holds L+1 nodes (B, T, D):
	// the stack's input x, then each layer's output, the final norm of a
	// pre-norm stack applied to none of them (see EncoderOutput.Hidden).
	Hidden []*gorgonia.Node
	// Attentions, when Outputs.Attentions is set, holds L nodes, each
	// layer's causal self-attention probabilities before dropout,
	// (B·h, T, T) laid out as (B, h, T, T).
	Attentions []*gorgonia.Node
	// CrossAttentions, when Outputs.CrossAttentions is set, holds L nodes,
	// each layer's attention over the encoder output, (B·h, T, Tm) laid
	// out as (B, h, T, Tm) (see DecoderBlock.ForwardWithProbs).
	CrossAttentions []*gorgonia.Node
}

// ForwardOutputs is Forward, x (B, T, D) given the encoder output memory
// (B, Tm, D) with optional key-padding masks mask (B, T) and memMask
// (B, Tm), that also returns, as o asks, every layer's hidden state,
// self-attention and cross-attention probabilities (see DecoderOutput);
// read them with gorgonia.Read. An attention asked for runs unfused, as
// ForwardWithProbs does; with neither asked for the graph is Forward's
// and Last equals Forward's output bit for bit.
func (d *Decoder) ForwardOutputs(g *Graph, x, mask, memory, memMask *gorgonia.Node, o Outputs) (DecoderOutput, error) {
	var out DecoderOutput
	if o.HiddenStates {
		out.Hidden = append(make([]*gorgonia.Node, 0, len(d.Layers)+1), x)
	}
	if o.Attentions {
		out.Attentions = make([]*gorgonia.Node, len(d.Layers))
	}
	if o.CrossAttentions {
		out.CrossAttentions = make([]*gorgonia.Node, len(d.Layers))
	}
	if memory == nil {
		return DecoderOutput{}, fmt.Errorf("decoder: a decoder needs the encoder output")
	}
	var err error
	for i, b := range d.Layers {
		self := func(in *gorgonia.Node) (*gorgonia.Node, error) { return b.SelfAttn.Forward(g, in, nil, mask, true) }
		if o.Attentions {
			self = func(in *gorgonia.Node) (y *gorgonia.Node, err error) {
				y, out.Attentions[i], err = b.SelfAttn.ForwardWithProbs(g, in, nil, mask, true)
				return y, err
			}
		}
		cross := func(in *gorgonia.Node) (*gorgonia.Node, *gorgonia.Node, error) {
			return b.CrossAttn.forward(g, in, memory, memMask, false, o.CrossAttentions)
		}
		var probs *gorgonia.Node
		if x, probs, err = b.forward(g, x, self, cross); err != nil {
			return DecoderOutput{}, fmt.Errorf("decoder layer %d: %w", i, err)
		}
		if o.CrossAttentions {
			out.CrossAttentions[i] = probs
		}
		if o.HiddenStates {
			out.Hidden = append(out.Hidden, x)
		}
	}
	out.Last = x
	if d.Norm != nil {
		if out.Last, err = d.Norm.Forward(g, x); err != nil {
			return DecoderOutput{}, err
		}
	}
	return out, nil
}

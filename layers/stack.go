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
// EncoderBlock.ForwardCached).
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

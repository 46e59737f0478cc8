package layers

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
)

// Rotary is the rotary position embedding (RoPE, Su et al. 2021,
// https://arxiv.org/abs/2104.09864) of LLaMA-style decoders, a
// PositionEncoder: it rotates each query and key head at its absolute
// position, so that their scores depend on the positions' difference
// alone. It computes what Hugging Face's LlamaRotaryEmbedding (default
// rope_type, attention_scaling 1) and apply_rotary_pos_emb do:
//
//	inv_freq = 1 / Theta^(arange(0, d_head, 2) / d_head)
//	freqs = position_ids ⊗ inv_freq; emb = cat(freqs, freqs)
//	q_embed = q·cos(emb) + rotate_half(q)·sin(emb), the same for k
//
// with rotate_half(x) = cat(−x[..., d_head/2:], x[..., :d_head/2]) (the
// halves layout, not the paper's interleaved pairs). In float32 the
// frequencies, angles and cosines are rounded to float32 as Hugging Face's
// are; in float64 they are float64. It has no parameters, reads the
// positions at run time (a cached decoding step rotates each new token at
// its own position) and is safe for concurrent use.
//
// With InvFreq set (NewRotaryFreqs) the rotation uses those inverse
// frequencies instead of Theta's: scaled ones such as Llama 3.1's
// (llama.Rope.InvFreq), rounded to float32 in a float32 graph.
type Rotary struct {
	HeadDim int       // d_head, even: every head is rotated whole
	Theta   float64   // the frequencies' base, rope_theta: 10000 in LLaMA; unused with InvFreq
	InvFreq []float64 // d_head/2 inverse frequencies; nil: 1/Theta^(2i/d_head)
}

// NewRotary makes the encoding for heads of width headDim (even) with base
// theta (> 1; LLaMA's rope_theta is 10000).
func NewRotary(headDim int, theta float64) (*Rotary, error) {
	r := &Rotary{HeadDim: headDim, Theta: theta}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// NewRotaryFreqs makes the encoding for heads of width headDim (even)
// with the given inverse frequencies: headDim/2 finite positive values,
// invFreq[i] turning the pair (i, i+headDim/2). It copies invFreq.
func NewRotaryFreqs(headDim int, invFreq []float64) (*Rotary, error) {
	r := &Rotary{HeadDim: headDim, InvFreq: append([]float64(nil), invFreq...)}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// Validate reports a width, base or frequencies that cannot be used.
func (r *Rotary) Validate() error {
	if r.HeadDim <= 0 || r.HeadDim%2 != 0 {
		return fmt.Errorf("rotary: head width %d must be even and positive", r.HeadDim)
	}
	if r.InvFreq != nil {
		if len(r.InvFreq) != r.HeadDim/2 {
			return fmt.Errorf("rotary: %d inverse frequencies for heads of width %d; need %d", len(r.InvFreq), r.HeadDim, r.HeadDim/2)
		}
		for i, f := range r.InvFreq {
			if !(f > 0) || math.IsInf(f, 1) {
				return fmt.Errorf("rotary: inverse frequency %d is %g; it must be finite and positive", i, f)
			}
		}
		return nil
	}
	if !(r.Theta > 1) || math.IsInf(r.Theta, 1) {
		return fmt.Errorf("rotary: base (rope_theta) %g must be finite and more than 1", r.Theta)
	}
	return nil
}

// Apply rotates q (B·h, Tq, d_head) at positions qPos (B, Tq) and k
// (B·kvh, Tk, d_head) at kPos (B, Tk) (see PositionEncoder).
func (r *Rotary) Apply(g *Graph, q, k, qPos, kPos *gorgonia.Node) (qOut, kOut *gorgonia.Node, err error) {
	if err := r.Validate(); err != nil {
		return nil, nil, err
	}
	for _, x := range []*gorgonia.Node{q, k} {
		if x.Dims() != 3 || x.Shape()[2] != r.HeadDim {
			return nil, nil, fmt.Errorf("rotary: heads %v must be (N, T, %d)", x.Shape(), r.HeadDim)
		}
	}
	rotate := func(x, pos *gorgonia.Node) (*gorgonia.Node, error) {
		if r.InvFreq != nil {
			return ops.RotaryFreqs(x, pos, r.InvFreq)
		}
		return ops.Rotary(x, pos, r.Theta)
	}
	if qOut, err = rotate(q, qPos); err != nil {
		return nil, nil, fmt.Errorf("queries: %w", err)
	}
	if kOut, err = rotate(k, kPos); err != nil {
		return nil, nil, fmt.Errorf("keys: %w", err)
	}
	return qOut, kOut, nil
}

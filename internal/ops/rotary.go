package ops

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Rotary applies rotary position embeddings (RoPE, Su et al. 2021,
// https://arxiv.org/abs/2104.09864) to attention heads x (B·h, T, d), laid
// out as (B, h, T, d), at int positions pos (B, T), as Hugging Face's
// apply_rotary_pos_emb does with LlamaRotaryEmbedding's cos and sin:
//
//	out = x·cos + rotate_half(x)·sin, rotate_half(x) = (−x[d/2:], x[:d/2])
//	cos, sin = cos(θ), sin(θ) of θ[b, t, i] = pos[b, t]·inv_freq[i mod d/2]
//	inv_freq[i] = 1 / theta^(2i/d)
//
// The number of heads h is x's rows over pos's, so queries and keys with
// fewer (grouped) heads take the same positions. d must be even. In
// float32, inv_freq, θ and their cosines are rounded to float32 as
// Hugging Face computes them (in float32 whatever the model's dtype); in
// float64 all is float64. Positions are read at run time: a negative one
// is an error.
func Rotary(x, pos *gorgonia.Node, theta float64) (*gorgonia.Node, error) {
	if err := checkFloatNode("rotary", "x", x); err != nil {
		return nil, err
	}
	if err := checkIntNode("rotary", "positions", pos); err != nil {
		return nil, err
	}
	if !(theta > 1) || math.IsInf(theta, 1) {
		return nil, fmt.Errorf("rotary: base %g must be finite and more than 1", theta)
	}
	xs, ps := x.Shape(), pos.Shape()
	if x.Dims() != 3 || pos.Dims() != 2 || ps[0] == 0 || xs[0]%ps[0] != 0 || xs[1] != ps[1] || xs[2]%2 != 0 {
		return nil, fmt.Errorf("rotary: heads %v and positions %v must be (B·h, T, d) and (B, T) with d even", xs, ps)
	}
	return gorgonia.ApplyOp(&rotaryOp{base: base{name: fmt.Sprintf("Rotary(%g)", theta), arity: 2}, theta: theta}, x, pos)
}

// RotaryFreqs is Rotary with the inverse frequencies given: invFreq has
// d/2 finite values, inv_freq[i] of the pair (i, i+d/2), such as Llama
// 3.1's scaled ones (transformers' rope init functions). In float32 each
// is rounded to float32 (transformers computes them in float32; its
// rounding may differ in the last bit), θ and its cosines as in Rotary.
func RotaryFreqs(x, pos *gorgonia.Node, invFreq []float64) (*gorgonia.Node, error) {
	if err := checkFloatNode("rotary", "x", x); err != nil {
		return nil, err
	}
	if err := checkIntNode("rotary", "positions", pos); err != nil {
		return nil, err
	}
	xs, ps := x.Shape(), pos.Shape()
	if x.Dims() != 3 || pos.Dims() != 2 || ps[0] == 0 || xs[0]%ps[0] != 0 || xs[1] != ps[1] || xs[2]%2 != 0 {
		return nil, fmt.Errorf("rotary: heads %v and positions %v must be (B·h, T, d) and (B, T) with d even", xs, ps)
	}
	if len(invFreq) != xs[2]/2 {
		return nil, fmt.Errorf("rotary: %d inverse frequencies for heads of width %d; need %d", len(invFreq), xs[2], xs[2]/2)
	}
	for i, f := range invFreq {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("rotary: inverse frequency %d is %g; it must be finite", i, f)
		}
	}
	freq := append([]float64(nil), invFreq...)
	return gorgonia.ApplyOp(&rotaryOp{base: base{name: fmt.Sprintf("Rotary(%v)", freq), arity: 2}, freq: freq}, x, pos)
}

type rotaryOp struct {
	base
	theta   float64
	freq    []float64 // the inverse frequencies given (RotaryFreqs); nil: theta's
	inverse bool      // rotate by −θ: the gradient
}

// freqs64 and freqs32 are the op's inverse frequencies for heads of width d.
func (op *rotaryOp) freqs64(d int) []float64 {
	if op.freq != nil {
		return op.freq
	}
	return invFreq64(op.theta, d)
}

func (op *rotaryOp) freqs32(d int) []float32 {
	if op.freq == nil {
		return invFreq32(op.theta, d)
	}
	f := make([]float32, len(op.freq))
	for i, v := range op.freq {
		f[i] = float32(v)
	}
	return f
}

func (op *rotaryOp) Type() hm.Type {
	return hm.NewFnType(tt(3, typeA), tt(2, tensor.Int), tt(3, typeA))
}

func (op *rotaryOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return firstShape(op.name, in)
}

func (op *rotaryOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs[0])
	if err != nil {
		return nil, err
	}
	pos, err := ints(op.name, vs[1])
	if err != nil {
		return nil, err
	}
	for i, p := range pos {
		if p < 0 {
			return nil, fmt.Errorf("rotary: position %d is negative (%d)", i, p)
		}
	}
	shape := ts[0].Shape()
	out := op.output(dt, shape, false)
	heads := shape[0] * shape[1] / len(pos)
	if op.freq != nil && len(op.freq) != shape[2]/2 {
		return nil, fmt.Errorf("rotary: %d inverse frequencies for heads of width %d", len(op.freq), shape[2])
	}
	if isFloat32(dt) {
		rotaryKernel(data[float32](ts[0]), data[float32](out), pos, op.freqs32(shape[2]), heads, shape[1], shape[2], op.inverse)
	} else {
		rotaryKernel(data[float64](ts[0]), data[float64](out), pos, op.freqs64(shape[2]), heads, shape[1], shape[2], op.inverse)
	}
	return out, nil
}

// invFreq64 is inv_freq (d/2) in float64.
func invFreq64(theta float64, d int) []float64 {
	f := make([]float64, d/2)
	for i := range f {
		f[i] = 1 / math.Pow(theta, float64(2*i)/float64(d))
	}
	return f
}

// invFreq32 is inv_freq (d/2) rounded as Hugging Face computes it:
// 1.0 / (base ** (arange(0, d, 2).float() / d)) in float32.
func invFreq32(theta float64, d int) []float32 {
	f := make([]float32, d/2)
	for i := range f {
		e := float32(2*i) / float32(d)
		f[i] = 1 / float32(math.Pow(theta, float64(e)))
	}
	return f
}

// angle is θ = p·f, cos θ and sin θ in T's precision: a float32 product
// (Hugging Face's freqs), whose cosine is rounded to float32.
func angle[T Float](p int, f T) (c, s T) {
	a := T(T(p) * f)
	return T(math.Cos(float64(a))), T(math.Sin(float64(a)))
}

// rotaryKernel rotates x (B·h, T, d) into out at positions pos (B, T),
// by −θ with inverse.
func rotaryKernel[T Float](x, out []T, pos []int, freq []T, heads, t, d int, inverse bool) {
	half := d / 2
	parallel.For(len(pos), heads*d*4, func(lo, hi int) {
		cos, sin := make([]T, half), make([]T, half)
		for bt := lo; bt < hi; bt++ {
			b, j := bt/t, bt%t
			for i := range half {
				cos[i], sin[i] = angle(pos[bt], freq[i])
				if inverse {
					sin[i] = -sin[i]
				}
			}
			for h := range heads {
				row := ((b*heads+h)*t + j) * d
				in, o := x[row:row+d], out[row:row+d]
				for i := range half {
					// Explicit conversions round each product, as
					// PyTorch's q·cos + rotate_half(q)·sin does.
					x1, x2 := in[i], in[i+half]
					o[i] = T(x1*cos[i]) - T(x2*sin[i])
					o[i+half] = T(x2*cos[i]) + T(x1*sin[i])
				}
			}
		}
	})
}

func (op *rotaryOp) DiffWRT(int) []bool { return []bool{true, false} }

// SymDiff: the rotation is orthogonal, so dx is dy rotated back by −θ.
func (op *rotaryOp) SymDiff(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	name := fmt.Sprintf("RotaryGrad(%g)", op.theta)
	if op.freq != nil {
		name = fmt.Sprintf("RotaryGrad(%v)", op.freq)
	}
	dx, err := gorgonia.ApplyOp(&rotaryOp{base: base{name: name, arity: 2}, theta: op.theta, freq: op.freq, inverse: !op.inverse}, grad, in[1])
	if err != nil {
		return nil, fmt.Errorf("rotary grad: %w", err)
	}
	return gorgonia.Nodes{dx, nil}, nil
}

package ops

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SwiGLU is the gate of a SwiGLU feed-forward (Shazeer 2020, "GLU variants
// improve Transformer"), silu(gate) ⊙ up elementwise, with
// silu(g) = g·σ(g), as Hugging Face's LlamaMLP computes
// act_fn(gate_proj(x)) * up_proj(x). gate and up have the same shape and
// dtype; so has the result. Each silu is computed in float64 and rounded
// to the element type before the product, which is rounded again.
func SwiGLU(gate, up *gorgonia.Node) (*gorgonia.Node, error) {
	const name = "swiglu"
	if err := checkFloatNode(name, "gate", gate); err != nil {
		return nil, err
	}
	if err := checkFloatNode(name, "up", up); err != nil {
		return nil, err
	}
	if !gate.Shape().Eq(up.Shape()) || gate.Dtype() != up.Dtype() {
		return nil, fmt.Errorf("swiglu: gate %v (%v) and up %v (%v) must have one shape and dtype", gate.Shape(), gate.Dtype(), up.Shape(), up.Dtype())
	}
	return gorgonia.ApplyOp(&swigluOp{base: base{name: "SwiGLU", arity: 2}, wrt: -1}, gate, up)
}

// swigluOp maps (gate, up) to silu(gate)·up, or, as a gradient op
// (wrt 0 or 1), (gate, up, dy) to d/dgate or d/dup.
type swigluOp struct {
	base
	wrt int // −1: forward; 0: gradient of gate; 1: of up
}

func (op *swigluOp) Type() hm.Type { return sameType(op.arity) }

func (op *swigluOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return firstShape(op.name, in)
}

func (op *swigluOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	for _, t := range ts[1:] {
		if !t.Shape().Eq(ts[0].Shape()) {
			return nil, fmt.Errorf("%s: inputs %v and %v differ in shape", op.name, ts[0].Shape(), t.Shape())
		}
	}
	out := op.output(dt, ts[0].Shape(), false)
	if isFloat32(dt) {
		swigluKernel(op.wrt, data[float32](ts[0]), data[float32](ts[1]), dyOf2[float32](ts), data[float32](out))
	} else {
		swigluKernel(op.wrt, data[float64](ts[0]), data[float64](ts[1]), dyOf2[float64](ts), data[float64](out))
	}
	return out, nil
}

func dyOf2[T Float](ts []*tensor.Dense) []T {
	if len(ts) < 3 {
		return nil
	}
	return data[T](ts[2])
}

// swigluKernel writes silu(g)·u (wrt −1), dy·u·silu'(g) (wrt 0) or
// dy·silu(g) (wrt 1), with silu'(g) = σ(g)·(1 + g·(1 − σ(g))).
func swigluKernel[T Float](wrt int, g, u, dy, out []T) {
	parallel.For(len(g), 16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := float64(g[i])
			sig := 1 / (1 + math.Exp(-v))
			switch wrt {
			case -1:
				out[i] = T(v*sig) * u[i]
			case 0:
				out[i] = dy[i] * u[i] * T(sig*(1+v*(1-sig)))
			default:
				out[i] = dy[i] * T(v*sig)
			}
		}
	})
}

func (op *swigluOp) DiffWRT(n int) []bool { return []bool{true, true} }

func (op *swigluOp) SymDiff(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if op.wrt >= 0 {
		return nil, fmt.Errorf("%s: second derivatives are not implemented", op.name)
	}
	res := make(gorgonia.Nodes, 2)
	for i := range res {
		g := &swigluOp{base: base{name: fmt.Sprintf("SwiGLUGrad(%d)", i), arity: 3}, wrt: i}
		n, err := gorgonia.ApplyOp(g, in[0], in[1], grad)
		if err != nil {
			return nil, fmt.Errorf("swiglu grad: %w", err)
		}
		res[i] = n
	}
	return res, nil
}

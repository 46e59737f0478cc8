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
// dtype; so has the result. σ(g) is computed in float64 (in float32 work
// in float32, with exp32) and silu(g) rounded to the element type before
// the product, which is rounded again.
// With gradients the forward pass keeps σ(gate) (one element per element),
// so the backward pass computes no exponential.
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
	// wantGrad is set by SymDiff: forward runs then keep σ(gate) in
	// kept32 or kept64, which the gradient ops of the same run read.
	wantGrad bool
	kept32   []float32
	kept64   []float64
	fwd      *swigluOp // on a gradient op: the forward op
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
	n := ts[0].Size()
	if isFloat32(dt) && op.wrt < 0 {
		swigluForward32(data[float32](ts[0]), data[float32](ts[1]), data[float32](out), op.sigma32(n))
	} else if isFloat32(dt) {
		swigluKernel(op.wrt, data[float32](ts[0]), data[float32](ts[1]), dyOf2[float32](ts), data[float32](out), op.sigma32(n))
	} else {
		swigluKernel(op.wrt, data[float64](ts[0]), data[float64](ts[1]), dyOf2[float64](ts), data[float64](out), op.sigma64(n))
	}
	return out, nil
}

// sigma32 is the σ(gate) buffer of this run: on the forward op with
// wantGrad, where to keep it; on a gradient op, the forward op's when it
// kept n values; else nil (computed afresh).
func (op *swigluOp) sigma32(n int) []float32 {
	if op.wrt >= 0 {
		if op.fwd != nil && op.fwd.wantGrad && len(op.fwd.kept32) == n {
			return op.fwd.kept32
		}
		return nil
	}
	if !op.wantGrad {
		return nil
	}
	if k := op.side.float32s(n); k != nil {
		op.kept32 = k
	} else if len(op.kept32) != n {
		op.side.miss()
		op.side = nil
		op.kept32 = make([]float32, n)
	}
	return op.kept32
}

// sigma64 is sigma32 for float64 work.
func (op *swigluOp) sigma64(n int) []float64 {
	if op.wrt >= 0 {
		if op.fwd != nil && op.fwd.wantGrad && len(op.fwd.kept64) == n {
			return op.fwd.kept64
		}
		return nil
	}
	if !op.wantGrad {
		return nil
	}
	if k := op.side.float64s(n); k != nil {
		op.kept64 = k
	} else if len(op.kept64) != n {
		op.side.miss()
		op.side = nil
		op.kept64 = make([]float64, n)
	}
	return op.kept64
}

func dyOf2[T Float](ts []*tensor.Dense) []T {
	if len(ts) < 3 {
		return nil
	}
	return data[T](ts[2])
}

// sigmoid is σ(v) in float64.
func sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

// swigluKernel writes silu(g)·u (wrt −1, keeping σ(g) in sig if not nil),
// dy·u·silu'(g) (wrt 0) or dy·silu(g) (wrt 1), with
// silu'(g) = σ(g)·(1 + g·(1 − σ(g))), reading σ(g) from sig if not nil.
func swigluKernel[T Float](wrt int, g, u, dy, out, sig []T) {
	parallel.For(len(g), 16, func(lo, hi int) {
		g, u, out := g[lo:hi], u[lo:hi], out[lo:hi]
		var s []T
		if sig != nil {
			s = sig[lo:hi]
		}
		switch {
		case wrt < 0 && s != nil:
			for i, x := range g {
				v := float64(x)
				sg := sigmoid(v)
				s[i] = T(sg)
				out[i] = T(v*sg) * u[i]
			}
		case wrt < 0:
			for i, x := range g {
				v := float64(x)
				out[i] = T(v*sigmoid(v)) * u[i]
			}
		case wrt == 0:
			dy := dy[lo:hi]
			for i, x := range g {
				v := float64(x)
				var sg float64
				if s != nil {
					sg = float64(s[i])
				} else {
					sg = sigmoid(v)
				}
				out[i] = dy[i] * u[i] * T(sg*(1+v*(1-sg)))
			}
		default:
			dy := dy[lo:hi]
			for i, x := range g {
				v := float64(x)
				var sg float64
				if s != nil {
					sg = float64(s[i])
				} else {
					sg = sigmoid(v)
				}
				out[i] = dy[i] * T(v*sg)
			}
		}
	})
}

// swigluForward32 is swigluKernel's forward pass in float32 work, σ from
// exp32 (within 3e-7 of math.Exp), through the vector kernels of vec.go
// (swigluGo, or its AVX2/AVX-512 form, within a few ulps of it): σ(gate)
// is kept in sig when it is not nil.
func swigluForward32(g, u, out, sig []float32) {
	parallel.For(len(g), 8, func(lo, hi int) {
		var s []float32
		if sig != nil {
			s = sig[lo:hi]
		}
		vecSwiGLU(g[lo:hi], u[lo:hi], out[lo:hi], s)
	})
}

// swigluGo is the portable swiglu of vec.go: out = g/(1 + exp32(−g))·u
// without keep, else keep = σ = 1/(1 + exp32(−g)) and out = g·σ·u.
func swigluGo(g, u, out, keep []float32) {
	if keep == nil {
		for i, v := range g {
			out[i] = v / (1 + exp32(-v)) * u[i]
		}
		return
	}
	for i, v := range g {
		sg := 1 / (1 + exp32(-v))
		keep[i] = sg
		out[i] = v * sg * u[i]
	}
}

func (op *swigluOp) DiffWRT(n int) []bool { return []bool{true, true} }

func (op *swigluOp) SymDiff(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if op.wrt >= 0 {
		return nil, fmt.Errorf("%s: second derivatives are not implemented", op.name)
	}
	op.wantGrad = true
	res := make(gorgonia.Nodes, 2)
	for i := range res {
		g := &swigluOp{base: base{name: fmt.Sprintf("SwiGLUGrad(%d)", i), arity: 3}, wrt: i, fwd: op}
		n, err := gorgonia.ApplyOp(g, in[0], in[1], grad)
		if err != nil {
			return nil, fmt.Errorf("swiglu grad: %w", err)
		}
		res[i] = n
	}
	return res, nil
}

// bufBytes implements bufSizer: a forward op whose gradient is taken
// keeps σ(gate), one element per element.
func (op *swigluOp) bufBytes(n *gorgonia.Node) (buf, side int64, outputInBuf bool) {
	buf = outputBytes(n)
	if dt, err := dtypeOf(n); err == nil && op.wrt < 0 && op.wantGrad {
		side = int64(n.Shape().TotalSize()) * int64(dt.Size())
	}
	return buf, side, true
}

// forwardBase implements forwarded.
func (op *swigluOp) forwardBase() (*base, bool) {
	if op.fwd == nil {
		return nil, false
	}
	return &op.fwd.base, false
}

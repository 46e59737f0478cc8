package ops

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Act names an elementwise activation.
type Act int

// The activations. GELU is exact, x·Φ(x) with Φ from erf (in float32 from
// erf32, within 5e-7 of erf; the tanh form from tanh32, likewise); GELUTanh is the
// tanh approximation 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) that GPT-2
// and BERT's original code use (Hendrycks & Gimpel, arXiv:1606.08415). SiLU
// is x·σ(x) (Elfwing et al. 2017; "swish" in Ramachandran et al. 2017), the
// activation of the OPUS-MT Marian models.
const (
	ReLU Act = iota
	GELU
	GELUTanh
	SiLU
)

func (a Act) String() string {
	switch a {
	case ReLU:
		return "relu"
	case GELU:
		return "gelu"
	case GELUTanh:
		return "gelu_tanh"
	case SiLU:
		return "silu"
	}
	return fmt.Sprintf("Act(%d)", int(a))
}

// Activate applies a to every element of x; the result has x's shape.
func Activate(x *gorgonia.Node, a Act) (*gorgonia.Node, error) {
	if err := checkFloatNode("activation", "input", x); err != nil {
		return nil, err
	}
	if a < ReLU || a > SiLU {
		return nil, fmt.Errorf("activation: unknown activation %v", a)
	}
	return gorgonia.ApplyOp(&actOp{base: base{name: a.String(), arity: 1}, act: a}, x)
}

type actOp struct {
	base
	act      Act
	grad     bool      // (x, dy) → dy·act'(x)
	wantGrad bool      // set by SymDiff: float32 GELU forward runs keep a per-element term
	kept     []float32 // that term (tanh or Φ) from the last forward run
	fwd      *actOp    // on the gradient op: the forward op
}

func (op *actOp) Type() hm.Type { return sameType(op.arity) }

func (op *actOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return firstShape(op.name, in)
}

func (op *actOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	out := op.output(dt, ts[0].Shape(), false)
	if isFloat32(dt) && (op.act == GELU || op.act == GELUTanh) {
		x, y := data[float32](ts[0]), data[float32](out)
		if op.grad {
			var kept []float32
			if op.fwd != nil && len(op.fwd.kept) == len(x) {
				kept = op.fwd.kept
			}
			parallel.For(len(x), 8, func(lo, hi int) {
				gelu32(op.act, true, x[lo:hi], dyOf[float32](ts)[lo:hi], y[lo:hi], sub(kept, lo, hi))
			})
			return out, nil
		}
		if op.wantGrad {
			if k := op.side.float32s(len(x)); k != nil {
				op.kept = k
			} else if len(op.kept) != len(x) {
				op.side.miss()
				op.side = nil
				op.kept = make([]float32, len(x))
			}
		}
		parallel.For(len(x), 8, func(lo, hi int) { gelu32(op.act, false, x[lo:hi], nil, y[lo:hi], sub(op.kept, lo, hi)) })
		return out, nil
	}
	if isFloat32(dt) {
		actKernel(op.act, op.grad, data[float32](ts[0]), dyOf[float32](ts), data[float32](out))
	} else {
		actKernel(op.act, op.grad, data[float64](ts[0]), dyOf[float64](ts), data[float64](out))
	}
	return out, nil
}

// gelu32 runs one of the float32 GELU kernels (vector ones where the CPU
// has them, see vec.go); kept is the forward's tanh or Φ per element
// (written by the forward, read by the gradient), or nil.
func gelu32(a Act, grad bool, x, dy, out, kept []float32) {
	vecGELU(a, grad, x, dy, out, kept)
}

func sub(s []float32, lo, hi int) []float32 {
	if s == nil {
		return nil
	}
	return s[lo:hi]
}

func dyOf[T Float](ts []*tensor.Dense) []T {
	if len(ts) < 2 {
		return nil
	}
	return data[T](ts[1])
}

const (
	sqrt2       = math.Sqrt2
	sqrt2OverPi = 0.7978845608028654 // √(2/π)
	invSqrt2Pi  = 0.3989422804014327 // 1/√(2π)
	geluCoef    = 0.044715
)

func actKernel[T Float](a Act, grad bool, x, dy, out []T) {
	parallel.For(len(x), 8, func(lo, hi int) {
		x, out := x[lo:hi], out[lo:hi]
		if grad {
			actGrad(a, x, dy[lo:hi], out)
		} else {
			actForward(a, x, out)
		}
	})
}

// actForward writes act(x); one loop per activation keeps the switch out of
// the element loop and computes only what the value needs.
func actForward[T Float](a Act, x, out []T) {
	switch a {
	case ReLU:
		for i, v := range x {
			out[i] = max(v, 0)
		}
	case GELU:
		for i, t := range x {
			v := float64(t)
			out[i] = T(0.5 * v * (1 + math.Erf(v/sqrt2)))
		}
	case GELUTanh:
		for i, t := range x {
			v := float64(t)
			out[i] = T(0.5 * v * (1 + math.Tanh(sqrt2OverPi*(v+geluCoef*v*v*v))))
		}
	case SiLU:
		for i, t := range x {
			v := float64(t)
			out[i] = T(v / (1 + math.Exp(-v)))
		}
	}
}

// actGrad writes dy·act'(x): for GELU Φ(x) + x·φ(x); for the tanh form
// 0.5·(1+t) + 0.5·x·(1−t²)·√(2/π)·(1 + 3·0.044715·x²); for SiLU
// σ(x)·(1 + x·(1 − σ(x))).
func actGrad[T Float](a Act, x, dy, out []T) {
	switch a {
	case ReLU:
		for i, v := range x {
			out[i] = 0
			if v > 0 {
				out[i] = dy[i]
			}
		}
	case GELU:
		for i, t := range x {
			v := float64(t)
			cdf := 0.5 * (1 + math.Erf(v/sqrt2))
			out[i] = dy[i] * T(cdf+v*invSqrt2Pi*math.Exp(-0.5*v*v))
		}
	case GELUTanh:
		for i, t := range x {
			v := float64(t)
			th := math.Tanh(sqrt2OverPi * (v + geluCoef*v*v*v))
			out[i] = dy[i] * T(0.5*(1+th)+0.5*v*(1-th*th)*sqrt2OverPi*(1+3*geluCoef*v*v))
		}
	case SiLU:
		for i, t := range x {
			v := float64(t)
			sig := 1 / (1 + math.Exp(-v))
			out[i] = dy[i] * T(sig*(1+v*(1-sig)))
		}
	}
}

func (op *actOp) DiffWRT(int) []bool { return []bool{true} }

func (op *actOp) SymDiff(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if op.grad {
		return nil, fmt.Errorf("%s: second derivatives are not implemented", op.name)
	}
	op.wantGrad = true
	dx, err := gorgonia.ApplyOp(&actOp{base: base{name: op.name + "Grad", arity: 2}, act: op.act, grad: true, fwd: op}, in[0], grad)
	if err != nil {
		return nil, fmt.Errorf("%s grad: %w", op.name, err)
	}
	return gorgonia.Nodes{dx}, nil
}

// bufBytes implements bufSizer: a float32 GELU forward op that its
// gradient reads keeps a second buffer of one float32 per element.
func (op *actOp) bufBytes(n *gorgonia.Node) (buf, side int64, outputInBuf bool) {
	buf = outputBytes(n)
	if dt, err := dtypeOf(n); err == nil && isFloat32(dt) && !op.grad && op.wantGrad && (op.act == GELU || op.act == GELUTanh) {
		side = int64(n.Shape().TotalSize()) * 4
	}
	return buf, side, true
}

// forwardBase implements forwarded.
func (op *actOp) forwardBase() (*base, bool) {
	if op.fwd == nil {
		return nil, false
	}
	return &op.fwd.base, false
}

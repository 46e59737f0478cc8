package ops

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Act names an elementwise activation.
type Act int

// The activations. GELU is exact, x·Φ(x) with Φ from erf; GELUTanh is the
// tanh approximation 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) that GPT-2
// and BERT's original code use (Hendrycks & Gimpel, arXiv:1606.08415).
const (
	ReLU Act = iota
	GELU
	GELUTanh
)

func (a Act) String() string {
	switch a {
	case ReLU:
		return "relu"
	case GELU:
		return "gelu"
	case GELUTanh:
		return "gelu_tanh"
	}
	return fmt.Sprintf("Act(%d)", int(a))
}

// Activate applies a to every element of x; the result has x's shape.
func Activate(x *gorgonia.Node, a Act) (*gorgonia.Node, error) {
	if err := checkFloatNode("activation", "input", x); err != nil {
		return nil, err
	}
	if a < ReLU || a > GELUTanh {
		return nil, fmt.Errorf("activation: unknown activation %v", a)
	}
	return gorgonia.ApplyOp(&actOp{base: base{name: a.String(), arity: 1}, act: a}, x)
}

type actOp struct {
	base
	act  Act
	grad bool // (x, dy) → dy·act'(x)
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
	out := newDense(dt, ts[0].Shape())
	if isFloat32(dt) {
		actKernel(op.act, op.grad, data[float32](ts[0]), dyOf[float32](ts), data[float32](out))
	} else {
		actKernel(op.act, op.grad, data[float64](ts[0]), dyOf[float64](ts), data[float64](out))
	}
	return out, nil
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
	parallelFor(len(x), 8, func(lo, hi int) { actRange(a, grad, x, dy, out, lo, hi) })
}

func actRange[T Float](a Act, grad bool, x, dy, out []T, lo, hi int) {
	for i := lo; i < hi; i++ {
		t := x[i]
		v := float64(t)
		var f, df float64
		switch a {
		case ReLU:
			if v > 0 {
				f, df = v, 1
			}
		case GELU:
			cdf := 0.5 * (1 + math.Erf(v/sqrt2))
			f = v * cdf
			df = cdf + v*invSqrt2Pi*math.Exp(-0.5*v*v)
		case GELUTanh:
			u := sqrt2OverPi * (v + geluCoef*v*v*v)
			th := math.Tanh(u)
			f = 0.5 * v * (1 + th)
			df = 0.5*(1+th) + 0.5*v*(1-th*th)*sqrt2OverPi*(1+3*geluCoef*v*v)
		}
		if grad {
			out[i] = dy[i] * T(df)
		} else {
			out[i] = T(f)
		}
	}
}

func (op *actOp) DiffWRT(int) []bool { return []bool{true} }

func (op *actOp) SymDiff(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if op.grad {
		return nil, fmt.Errorf("%s: second derivatives are not implemented", op.name)
	}
	dx, err := gorgonia.ApplyOp(&actOp{base: base{name: op.name + "Grad", arity: 2}, act: op.act, grad: true}, in[0], grad)
	if err != nil {
		return nil, fmt.Errorf("%s grad: %w", op.name, err)
	}
	return gorgonia.Nodes{dx}, nil
}

package ops

import (
	"fmt"

	"github.com/chewxy/hm"
	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Add returns a + b for tensors of one shape (a residual connection). Unlike
// gorgonia.Add it reuses its output from run to run.
func Add(a, b *gorgonia.Node) (*gorgonia.Node, error) {
	if err := checkFloatNode("add", "a", a); err != nil {
		return nil, err
	}
	if err := checkFloatNode("add", "b", b); err != nil {
		return nil, err
	}
	if !a.Shape().Eq(b.Shape()) {
		return nil, fmt.Errorf("add: shapes %v and %v differ", a.Shape(), b.Shape())
	}
	return gorgonia.ApplyOp(&addOp{base: base{name: "Add", arity: 2}}, a, b)
}

type addOp struct{ base }

func (op *addOp) Type() hm.Type { return sameType(2) }

func (op *addOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return firstShape(op.name, in)
}

func (op *addOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	out := op.output(dt, ts[0].Shape(), false)
	if isFloat32(dt) {
		addInto(data[float32](ts[0]), data[float32](ts[1]), data[float32](out))
	} else {
		addInto(data[float64](ts[0]), data[float64](ts[1]), data[float64](out))
	}
	return out, nil
}

func addInto[T Float](a, b, out []T) {
	parallel.For(len(a), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = a[i] + b[i]
		}
	})
}

func (op *addOp) DiffWRT(int) []bool { return []bool{true, true} }

func (op *addOp) SymDiff(_ gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	return gorgonia.Nodes{grad, grad}, nil
}

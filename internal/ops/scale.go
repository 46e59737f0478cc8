package ops

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Scale returns c·x for a float tensor x of any shape and a constant c (the
// Transformer's √d_model on its embeddings). Unlike gorgonia.Mul with a
// scalar it reuses its output from run to run.
func Scale(x *gorgonia.Node, c float64) (*gorgonia.Node, error) {
	if err := checkFloatNode("scale", "x", x); err != nil {
		return nil, err
	}
	if math.IsNaN(c) || math.IsInf(c, 0) {
		return nil, fmt.Errorf("scale: factor %v is not finite", c)
	}
	return gorgonia.ApplyOp(&scaleOp{base: base{name: fmt.Sprintf("Scale(%g)", c), arity: 1}, c: c}, x)
}

type scaleOp struct {
	base
	c float64
}

func (op *scaleOp) Type() hm.Type { return sameType(1) }

func (op *scaleOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return firstShape(op.name, in)
}

func (op *scaleOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	out := op.output(dt, ts[0].Shape(), false)
	if isFloat32(dt) {
		scaleTo(data[float32](ts[0]), float32(op.c), data[float32](out))
	} else {
		scaleTo(data[float64](ts[0]), op.c, data[float64](out))
	}
	return out, nil
}

func scaleTo[T Float](x []T, c T, out []T) {
	parallel.For(len(x), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = c * x[i]
		}
	})
}

func (op *scaleOp) DiffWRT(int) []bool { return []bool{true} }

// SymDiff: d(c·x) = c·dy.
func (op *scaleOp) SymDiff(_ gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dx, err := Scale(grad, op.c)
	if err != nil {
		return nil, err
	}
	return gorgonia.Nodes{dx}, nil
}

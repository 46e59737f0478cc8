package ops

import (
	"errors"
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	kernels "github.com/d73a19ff/zoo/internal/gemm"
)

// errReducedGrad is the error of differentiating through a weight held in
// reduced precision (LinearReduced, GatherReduced): such weights are for
// inference only.
var errReducedGrad = errors.New("weights in reduced precision (bf16, int8) are for inference and have no gradient: load the model with float32 weights to train it")

// LinearReduced computes y = x·Wᵀ + b as Linear does, for a weight W
// (out, in) held in reduced precision (kernels.Reduced), widened to float32
// inside the product. x has shape (..., in) and dtype float32; b, which may
// be nil, has shape (out); the result has shape (..., out). One row of x
// (a decoding step) is a vector product over W's rows on all cores; more
// rows widen W a band at a time (kernels.Reduced.Mul). name names the weight
// in errors and tells the op apart from other weights' ops. The op has
// no gradient: differentiating through it (gorgonia.Grad) is an error
// naming the weight.
func LinearReduced(x *gorgonia.Node, w *kernels.Reduced, name string, b *gorgonia.Node) (*gorgonia.Node, error) {
	where := "linear " + name
	if err := checkFloatNode(where, "input", x); err != nil {
		return nil, err
	}
	if w == nil {
		return nil, fmt.Errorf("%s: the reduced weight is nil", where)
	}
	if x.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("%s: input has dtype %v; %v weights multiply float32 inputs: build the model in float32", where, x.Dtype(), w.Format)
	}
	if x.Dims() < 1 || x.Shape()[x.Dims()-1] != w.Cols {
		return nil, fmt.Errorf("%s: input %v does not have the weight's %d features", where, x.Shape(), w.Cols)
	}
	op := &reducedLinearOp{base: base{name: fmt.Sprintf("LinearReduced(%s,%v,%p)", name, w.Format, w), arity: 1}, w: w, xDims: x.Dims(), weight: name}
	args := []*gorgonia.Node{x}
	if b != nil {
		if err := checkFloatNode(where, "bias", b); err != nil {
			return nil, err
		}
		if b.Dtype() != tensor.Float32 || !b.Shape().Eq(tensor.Shape{w.Rows}) {
			return nil, fmt.Errorf("%s: bias %v %v does not fit the weight's (%d) float32", where, b.Shape(), b.Dtype(), w.Rows)
		}
		op.arity = 2
		args = append(args, b)
	}
	return gorgonia.ApplyOp(op, args...)
}

type reducedLinearOp struct {
	base
	w      *kernels.Reduced
	xDims  int
	weight string
}

func (op *reducedLinearOp) Type() hm.Type {
	if op.arity == 2 {
		return hm.NewFnType(tt(op.xDims, typeA), tt(1, typeA), tt(op.xDims, typeA))
	}
	return hm.NewFnType(tt(op.xDims, typeA), tt(op.xDims, typeA))
}

func (op *reducedLinearOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(op.name, in)
	if err != nil {
		return nil, err
	}
	out := s[0].Clone()
	out[len(out)-1] = op.w.Rows
	return out, nil
}

func (op *reducedLinearOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	if dt != tensor.Float32 {
		return nil, fmt.Errorf("linear %s: input has dtype %v, want float32", op.weight, dt)
	}
	x := ts[0]
	shape := x.Shape().Clone()
	shape[len(shape)-1] = op.w.Rows
	y := op.output(dt, shape, false)
	var bias []float32
	if len(ts) == 2 {
		bias = data[float32](ts[1])
	}
	op.w.Mul(data[float32](y), data[float32](x), bias, x.Size()/op.w.Cols)
	return y, nil
}

func (op *reducedLinearOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = true
	}
	return d
}

func (op *reducedLinearOp) SymDiff(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
	return nil, fmt.Errorf("linear %s (%v): %w", op.weight, op.w.Format, errReducedGrad)
}

// GatherReduced picks rows of a table (V, D) held in reduced precision
// by integer ids of any shape (...), widened to float32: the result has
// shape (..., D), as Gather's. An id outside [0, V) is an error at run
// time. The op has no gradient, as LinearReduced.
func GatherReduced(table *kernels.Reduced, name string, ids *gorgonia.Node) (*gorgonia.Node, error) {
	where := "gather " + name
	if table == nil {
		return nil, fmt.Errorf("%s: the reduced table is nil", where)
	}
	if err := checkIntNode(where, "ids", ids); err != nil {
		return nil, err
	}
	if ids.Dims() < 1 {
		return nil, fmt.Errorf("%s: ids must be at least 1-D, got %v", where, ids.Shape())
	}
	op := &reducedGatherOp{base: base{name: fmt.Sprintf("GatherReduced(%s,%v,%p)", name, table.Format, table), arity: 1}, w: table, idDims: ids.Dims(), table: name}
	return gorgonia.ApplyOp(op, ids)
}

type reducedGatherOp struct {
	base
	w      *kernels.Reduced
	idDims int
	table  string
}

func (op *reducedGatherOp) Type() hm.Type {
	// The output is a value TensorType: gorgonia reads a result type
	// without type variables only in that form.
	return hm.NewFnType(tt(op.idDims, tensor.Int), gorgonia.TensorType{Dims: op.idDims + 1, Of: tensor.Float32})
}

func (op *reducedGatherOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(op.name, in)
	if err != nil {
		return nil, err
	}
	return append(s[0].Clone(), op.w.Cols), nil
}

func (op *reducedGatherOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ids, err := ints(op.name, vs[0])
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if id < 0 || id >= op.w.Rows {
			return nil, fmt.Errorf("gather %s: id %d at position %d is outside the table's %d rows", op.table, id, i, op.w.Rows)
		}
	}
	out := op.output(tensor.Float32, append(vs[0].Shape().Clone(), op.w.Cols), false)
	y, d := data[float32](out), op.w.Cols
	for i, id := range ids {
		op.w.Row(id, y[i*d:(i+1)*d])
	}
	return out, nil
}

func (op *reducedGatherOp) DiffWRT(n int) []bool { return make([]bool, n) }

func (op *reducedGatherOp) SymDiff(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
	return nil, fmt.Errorf("gather %s (%v): %w", op.table, op.w.Format, errReducedGrad)
}

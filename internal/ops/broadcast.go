package ops

import (
	"fmt"

	"github.com/chewxy/hm"
	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SumLeading sums x over all but its last keep dims: x of shape
// (d0, …, dk, r1, …, r_keep) becomes (r1, …, r_keep). It is the gradient of
// a broadcast over leading dims (a bias add, a positional table added to a
// batch). It is used in backward passes and is not itself differentiable.
func SumLeading(x *gorgonia.Node, keep int) (*gorgonia.Node, error) {
	if err := checkFloatNode("sum leading", "input", x); err != nil {
		return nil, err
	}
	if keep < 1 || keep > x.Dims() {
		return nil, fmt.Errorf("sum leading: cannot keep %d dims of %v", keep, x.Shape())
	}
	out := x.Shape()[x.Dims()-keep:].Clone()
	return gorgonia.ApplyOp(&sumLeadingOp{base: base{name: fmt.Sprintf("SumLeading%v", out), arity: 1}, inDims: x.Dims(), out: out}, x)
}

type sumLeadingOp struct {
	base
	inDims int
	out    tensor.Shape
}

func (op *sumLeadingOp) Type() hm.Type {
	return hm.NewFnType(tt(op.inDims, typeA), tt(len(op.out), typeA))
}

func (op *sumLeadingOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return op.out.Clone(), nil
}

func (op *sumLeadingOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	y := op.output(dt, op.out, true) // sumRows accumulates
	if isFloat32(dt) {
		sumRows(data[float32](ts[0]), data[float32](y))
	} else {
		sumRows(data[float64](ts[0]), data[float64](y))
	}
	return y, nil
}

// sumRows adds every len(y)-long row of x into y. Cores split the columns,
// so no two write the same element.
func sumRows[T Float](x, y []T) {
	w := len(y)
	if w == 0 {
		return
	}
	parallel.For(w, len(x)/w, func(lo, hi int) {
		dst := y[lo:hi]
		if x32, ok := any(x).([]float32); ok { // vector adds (a bias gradient: 3% of a ViT step in scalar adds)
			dst32 := any(dst).([]float32)
			for r := 0; r+w <= len(x32); r += w {
				vecAxpy(x32[r+lo:r+hi], dst32, 1) // y + 1·x rounds as y + x
			}
			return
		}
		for r := 0; r+w <= len(x); r += w {
			for i, v := range x[r+lo : r+hi] {
				dst[i] += v
			}
		}
	})
}

// AddBroadcast returns x + y where y's shape equals the trailing dims of x's,
// so y is added to every leading index of x: x (B, T, D) + y (T, D) is
// (B, T, D). Gorgonia's own broadcasting materialises y at x's size; this
// does not.
func AddBroadcast(x, y *gorgonia.Node) (*gorgonia.Node, error) {
	const name = "add broadcast"
	if err := checkFloatNode(name, "x", x); err != nil {
		return nil, err
	}
	if err := checkFloatNode(name, "y", y); err != nil {
		return nil, err
	}
	k := y.Dims()
	if k == 0 || k > x.Dims() || !x.Shape()[x.Dims()-k:].Eq(y.Shape()) {
		return nil, fmt.Errorf("add broadcast: shape %v is not the trailing dims of %v", y.Shape(), x.Shape())
	}
	return gorgonia.ApplyOp(&addBroadcastOp{base: base{name: "AddBroadcast", arity: 2}, xDims: x.Dims(), yDims: k}, x, y)
}

type addBroadcastOp struct {
	base
	xDims, yDims int
}

func (op *addBroadcastOp) Type() hm.Type {
	return hm.NewFnType(tt(op.xDims, typeA), tt(op.yDims, typeA), tt(op.xDims, typeA))
}

func (op *addBroadcastOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return firstShape(op.name, in)
}

func (op *addBroadcastOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	out := op.output(dt, ts[0].Shape(), false)
	if isFloat32(dt) {
		addRows(data[float32](ts[0]), data[float32](ts[1]), data[float32](out))
	} else {
		addRows(data[float64](ts[0]), data[float64](ts[1]), data[float64](out))
	}
	return out, nil
}

// addRows sets out = x + y with y repeated over x's rows.
func addRows[T Float](x, y, out []T) {
	w := len(y)
	for r := 0; r+w <= len(x); r += w {
		xr, or := x[r:r+w], out[r:r+w]
		for i, v := range y {
			or[i] = xr[i] + v
		}
	}
}

func (op *addBroadcastOp) DiffWRT(int) []bool { return []bool{true, true} }

func (op *addBroadcastOp) SymDiff(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dy, err := SumLeading(grad, op.yDims)
	if err != nil {
		return nil, fmt.Errorf("add broadcast grad: %w", err)
	}
	return gorgonia.Nodes{grad, dy}, nil
}

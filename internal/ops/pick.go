package ops

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// PickLabelled gathers, in order, the positions of x (..., D) whose label
// in labels (...) int is not ignore, giving rows (M, D), and their labels,
// giving picked (M) int; the slots after the last labelled position are
// zero rows labelled ignore. A cross-entropy over (rows, picked) therefore
// equals the one over (x, labels) on every position, in value and in
// gradient, while the layers in between (a masked-LM head with a large
// vocabulary) run on M rows instead of all of them: the optimisation of
// Google's BERT (max_predictions_per_seq), NVIDIA's and Megatron's.
//
// More than m labelled positions is an error at run time. The gradient
// with respect to x scatters the rows back (zero elsewhere); labels get
// none.
func PickLabelled(x, labels *gorgonia.Node, m, ignore int) (rows, picked *gorgonia.Node, err error) {
	const name = "pick labelled"
	if err := checkFloatNode(name, "input", x); err != nil {
		return nil, nil, err
	}
	if err := checkIntNode(name, "labels", labels); err != nil {
		return nil, nil, err
	}
	if m <= 0 {
		return nil, nil, fmt.Errorf("pick labelled: %d slots; want at least 1", m)
	}
	xs := x.Shape()
	if x.Dims() < 2 || !labels.Shape().Eq(xs[:len(xs)-1]) {
		return nil, nil, fmt.Errorf("pick labelled: labels %v do not fit input %v, want the input's leading dims (..., D)", labels.Shape(), xs)
	}
	n, d := prod(xs[:len(xs)-1]), xs[len(xs)-1]
	if m > n {
		m = n
	}
	shape := pickShape{x: xs.Clone(), n: n, d: d, m: m, ignore: ignore}
	if rows, err = gorgonia.ApplyOp(&pickOp{base: base{name: fmt.Sprintf("PickLabelled(%d,%d)", m, ignore), arity: 2}, pickShape: shape, mode: pickRows}, x, labels); err != nil {
		return nil, nil, err
	}
	if picked, err = gorgonia.ApplyOp(&pickOp{base: base{name: fmt.Sprintf("PickLabels(%d,%d)", m, ignore), arity: 1}, pickShape: shape, mode: pickLabels}, labels); err != nil {
		return nil, nil, err
	}
	return rows, picked, nil
}

type pickShape struct {
	x               tensor.Shape // (..., D)
	n, d, m, ignore int
}

type pickMode int

const (
	pickRows   pickMode = iota // (x (..., D), labels (...)) → (M, D)
	pickLabels                 // labels (...) → (M) int
	pickGrad                   // (dy (M, D), labels (...)) → dx (..., D)
)

type pickOp struct {
	base
	pickShape
	mode pickMode
	idx  []int // the labelled positions of the last run, reused
}

func (op *pickOp) Type() hm.Type {
	ld := len(op.x) - 1
	switch op.mode {
	case pickLabels:
		// A value TensorType: gorgonia's Node.Dims knows no concrete
		// *TensorType result (type variables are substituted instead).
		return hm.NewFnType(tt(ld, tensor.Int), gorgonia.TensorType{Dims: 1, Of: tensor.Int})
	case pickGrad:
		return hm.NewFnType(tt(2, typeA), tt(ld, tensor.Int), tt(len(op.x), typeA))
	}
	return hm.NewFnType(tt(len(op.x), typeA), tt(ld, tensor.Int), tt(2, typeA))
}

func (op *pickOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	switch op.mode {
	case pickLabels:
		return tensor.Shape{op.m}, nil
	case pickGrad:
		return op.x.Clone(), nil
	}
	return tensor.Shape{op.m, op.d}, nil
}

// positions lists the labelled positions of labels into op.idx.
func (op *pickOp) positions(labels []int) error {
	op.idx = op.idx[:0]
	for i, l := range labels {
		if l != op.ignore {
			op.idx = append(op.idx, i)
		}
	}
	if len(op.idx) > op.m {
		return fmt.Errorf("pick labelled: %d labelled positions exceed the %d slots; raise the limit (max predictions) or label fewer positions", len(op.idx), op.m)
	}
	return nil
}

func (op *pickOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	labels, err := ints(op.name, vs[len(vs)-1])
	if err != nil {
		return nil, err
	}
	if len(labels) != op.n {
		return nil, fmt.Errorf("%s: %d labels, want %d", op.name, len(labels), op.n)
	}
	if err := op.positions(labels); err != nil {
		return nil, err
	}
	if op.mode == pickLabels {
		out := op.output(tensor.Int, tensor.Shape{op.m}, false)
		o := out.Data().([]int)
		for i := range o {
			o[i] = op.ignore
			if i < len(op.idx) {
				o[i] = labels[op.idx[i]]
			}
		}
		return out, nil
	}
	ts, dt, err := floats(op.name, vs[0])
	if err != nil {
		return nil, err
	}
	if op.mode == pickGrad {
		out := op.output(dt, op.x, true)
		if isFloat32(dt) {
			pickKernel(data[float32](ts[0]), data[float32](out), op.idx, op.d, true)
		} else {
			pickKernel(data[float64](ts[0]), data[float64](out), op.idx, op.d, true)
		}
		return out, nil
	}
	out := op.output(dt, tensor.Shape{op.m, op.d}, false)
	if isFloat32(dt) {
		pickKernel(data[float32](ts[0]), data[float32](out), op.idx, op.d, false)
	} else {
		pickKernel(data[float64](ts[0]), data[float64](out), op.idx, op.d, false)
	}
	return out, nil
}

// pickKernel copies rows idx of x (N, d) to the first rows of out (M, d)
// and zeroes the rest; in grad mode it copies the rows of in (M, d) back
// to rows idx of out (N, d), which the caller has zeroed.
func pickKernel[T Float](in, out []T, idx []int, d int, grad bool) {
	for i, j := range idx {
		if grad {
			copy(out[j*d:(j+1)*d], in[i*d:(i+1)*d])
		} else {
			copy(out[i*d:(i+1)*d], in[j*d:(j+1)*d])
		}
	}
	if !grad {
		clear(out[len(idx)*d:])
	}
}

func (op *pickOp) DiffWRT(n int) []bool {
	if op.mode == pickRows {
		return []bool{true, false}
	}
	return make([]bool, n)
}

func (op *pickOp) SymDiff(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if op.mode != pickRows {
		return nil, fmt.Errorf("%s: not differentiable", op.name)
	}
	g := &pickOp{base: base{name: fmt.Sprintf("PickLabelledGrad(%d,%d)%v", op.m, op.ignore, op.x), arity: 2}, pickShape: op.pickShape, mode: pickGrad}
	dx, err := gorgonia.ApplyOp(g, grad, in[1])
	if err != nil {
		return nil, fmt.Errorf("pick labelled grad: %w", err)
	}
	return gorgonia.Nodes{dx, nil}, nil
}

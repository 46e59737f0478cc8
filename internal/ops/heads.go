package ops

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SplitHeads permutes x (B, T, h·d) to (B·h, T, d), as PyTorch's
// x.view(B, T, h, d).transpose(1, 2) followed by a reshape: head k of batch
// item b is row b·h+k and takes features [k·d, (k+1)·d).
func SplitHeads(x *gorgonia.Node, heads int) (*gorgonia.Node, error) {
	if err := checkFloatNode("split heads", "input", x); err != nil {
		return nil, err
	}
	if x.Dims() != 3 || heads < 1 || x.Shape()[2]%heads != 0 {
		return nil, fmt.Errorf("split heads: input %v must be (B, T, C) with C divisible by %d heads", x.Shape(), heads)
	}
	return gorgonia.ApplyOp(&headsOp{base: base{name: fmt.Sprintf("SplitHeads(%d)", heads), arity: 1}, heads: heads, split: true}, x)
}

// MergeHeads is the inverse of SplitHeads: (B·h, T, d) to (B, T, h·d).
func MergeHeads(x *gorgonia.Node, heads int) (*gorgonia.Node, error) {
	if err := checkFloatNode("merge heads", "input", x); err != nil {
		return nil, err
	}
	if x.Dims() != 3 || heads < 1 || x.Shape()[0]%heads != 0 {
		return nil, fmt.Errorf("merge heads: input %v must be (B·h, T, d) with B·h divisible by %d heads", x.Shape(), heads)
	}
	return gorgonia.ApplyOp(&headsOp{base: base{name: fmt.Sprintf("MergeHeads(%d)", heads), arity: 1}, heads: heads}, x)
}

type headsOp struct {
	base
	heads int
	split bool
}

func (op *headsOp) Type() hm.Type { return hm.NewFnType(tt(3, typeA), tt(3, typeA)) }

func (op *headsOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(op.name, in)
	if err != nil {
		return nil, err
	}
	a, t, c := s[0][0], s[0][1], s[0][2]
	if op.split {
		return tensor.Shape{a * op.heads, t, c / op.heads}, nil
	}
	return tensor.Shape{a / op.heads, t, c * op.heads}, nil
}

func (op *headsOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	x := ts[0]
	s := x.Shape()
	var b, t, d int
	var shape tensor.Shape
	if op.split {
		b, t, d = s[0], s[1], s[2]/op.heads
		shape = tensor.Shape{b * op.heads, t, d}
	} else {
		b, t, d = s[0]/op.heads, s[1], s[2]
		shape = tensor.Shape{b, t, d * op.heads}
	}
	out := newDense(dt, shape)
	if isFloat32(dt) {
		permuteHeads(data[float32](x), data[float32](out), b, t, op.heads, d, op.split)
	} else {
		permuteHeads(data[float64](x), data[float64](out), b, t, op.heads, d, op.split)
	}
	return out, nil
}

// permuteHeads moves (B, T, h, d) to (B, h, T, d) when split, else back.
func permuteHeads[T Float](x, out []T, b, t, h, d int, split bool) {
	for bi := 0; bi < b; bi++ {
		for ti := 0; ti < t; ti++ {
			for hi := 0; hi < h; hi++ {
				merged := ((bi*t+ti)*h + hi) * d
				heads := ((bi*h+hi)*t + ti) * d
				if split {
					copy(out[heads:heads+d], x[merged:merged+d])
				} else {
					copy(out[merged:merged+d], x[heads:heads+d])
				}
			}
		}
	}
}

func (op *headsOp) DiffWRT(int) []bool { return []bool{true} }

func (op *headsOp) SymDiff(_ gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	var dx *gorgonia.Node
	var err error
	if op.split {
		dx, err = MergeHeads(grad, op.heads)
	} else {
		dx, err = SplitHeads(grad, op.heads)
	}
	if err != nil {
		return nil, fmt.Errorf("%s grad: %w", op.name, err)
	}
	return gorgonia.Nodes{dx}, nil
}

package ops

import (
	"fmt"

	"github.com/chewxy/hm"
	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SplitHeads permutes x (B, T, h·d) to (B·h, T, d), as PyTorch's
// x.view(B, T, h, d).transpose(1, 2) followed by a reshape: head k of batch
// item b is row b·h+k and takes features [k·d, (k+1)·d).
func SplitHeads(x *gorgonia.Node, heads int) (*gorgonia.Node, error) {
	return SplitHeadsPart(x, heads, 0, 1)
}

// SplitHeadsPart splits part k of parts equal column blocks of x: for a fused
// query-key-value projection x (B, T, 3·C), part 0, 1, 2 of 3 give the query,
// key and value heads, each (B·h, T, C/h).
func SplitHeadsPart(x *gorgonia.Node, heads, part, parts int) (*gorgonia.Node, error) {
	if err := checkFloatNode("split heads", "input", x); err != nil {
		return nil, err
	}
	if parts < 1 || part < 0 || part >= parts {
		return nil, fmt.Errorf("split heads: part %d of %d", part, parts)
	}
	if x.Dims() != 3 || heads < 1 || x.Shape()[2]%(heads*parts) != 0 {
		return nil, fmt.Errorf("split heads: input %v must be (B, T, %d·C) with C divisible by %d heads", x.Shape(), parts, heads)
	}
	return gorgonia.ApplyOp(newHeadsOp(heads, part, parts, true), x)
}

func newHeadsOp(heads, part, parts int, split bool) *headsOp {
	name := "MergeHeads"
	if split {
		name = "SplitHeads"
	}
	return &headsOp{base: base{name: fmt.Sprintf("%s(%d,%d/%d)", name, heads, part, parts), arity: 1}, heads: heads, part: part, parts: parts, split: split}
}

// MergeHeads is the inverse of SplitHeads: (B·h, T, d) to (B, T, h·d).
func MergeHeads(x *gorgonia.Node, heads int) (*gorgonia.Node, error) {
	if err := checkFloatNode("merge heads", "input", x); err != nil {
		return nil, err
	}
	if x.Dims() != 3 || heads < 1 || x.Shape()[0]%heads != 0 {
		return nil, fmt.Errorf("merge heads: input %v must be (B·h, T, d) with B·h divisible by %d heads", x.Shape(), heads)
	}
	return gorgonia.ApplyOp(newHeadsOp(heads, 0, 1, false), x)
}

// headsOp moves (B, T, [part of parts], h, d) to (B, h, T, d) when split,
// and back when merging (writing zeros in the other parts).
type headsOp struct {
	base
	heads, part, parts int
	split              bool
}

func (op *headsOp) Type() hm.Type { return hm.NewFnType(tt(3, typeA), tt(3, typeA)) }

func (op *headsOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(op.name, in)
	if err != nil {
		return nil, err
	}
	a, t, c := s[0][0], s[0][1], s[0][2]
	if op.split {
		return tensor.Shape{a * op.heads, t, c / op.parts / op.heads}, nil
	}
	return tensor.Shape{a / op.heads, t, c * op.heads * op.parts}, nil
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
		b, t, d = s[0], s[1], s[2]/op.parts/op.heads
		shape = tensor.Shape{b * op.heads, t, d}
	} else {
		b, t, d = s[0]/op.heads, s[1], s[2]
		shape = tensor.Shape{b, t, d * op.heads * op.parts}
	}
	out := op.output(dt, shape, !op.split && op.parts > 1) // merging one part leaves the others zero
	if isFloat32(dt) {
		permuteHeads(data[float32](x), data[float32](out), b, t, op.heads, d, op.part, op.parts, op.split)
	} else {
		permuteHeads(data[float64](x), data[float64](out), b, t, op.heads, d, op.part, op.parts, op.split)
	}
	return out, nil
}

// permuteHeads moves (B, T, [part], h, d) to (B, h, T, d) when split, else
// back.
func permuteHeads[T Float](x, out []T, b, t, h, d, part, parts int, split bool) {
	// Batches on the cores; a head's d features move as one array when d is
	// 16, 32 or 64 (the ViT recipe's, ViT-Tiny's and BERT-Mini's head
	// widths): a copy() of them was a memmove call each, 5% of a ViT-Tiny
	// training step and 9% of the Fashion-MNIST recipe's (d 16).
	parallel.For(b, t*h*d, func(lo, hi int) {
		row := parts * h * d // one token's merged features
		for bi := lo; bi < hi; bi++ {
			for ti := 0; ti < t; ti++ {
				for hd := 0; hd < h; hd++ {
					merged := (bi*t+ti)*row + (part*h+hd)*d
					heads := ((bi*h+hd)*t + ti) * d
					var dst, src []T
					if split {
						dst, src = out[heads:heads+d], x[merged:merged+d]
					} else {
						dst, src = out[merged:merged+d], x[heads:heads+d]
					}
					switch d {
					case 16:
						v := *(*[16]T)(src)
						*(*[16]T)(dst) = v
					case 32:
						v := *(*[32]T)(src) // through a local: no overlap, no memmove call
						*(*[32]T)(dst) = v
					case 64:
						v := *(*[64]T)(src)
						*(*[64]T)(dst) = v
					default:
						copy(dst, src)
					}
				}
			}
		}
	})
}

func (op *headsOp) DiffWRT(int) []bool { return []bool{true} }

func (op *headsOp) SymDiff(_ gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dx, err := gorgonia.ApplyOp(newHeadsOp(op.heads, op.part, op.parts, !op.split), grad)
	if err != nil {
		return nil, fmt.Errorf("%s grad: %w", op.name, err)
	}
	return gorgonia.Nodes{dx}, nil
}

package ops

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// PaddedPositions maps token ids (B, T) int to position ids (B, T) int as
// transformers' create_position_ids_from_input_ids (RoBERTa) does: a
// token that is not pad gets pad + the number of non-pad tokens up to and
// including it in its row (pad+1, pad+2, …), and a pad token gets pad. The
// ids are read when the graph runs, so a graph built once serves every
// batch of its shape. It has no gradient (ids are not differentiable).
func PaddedPositions(ids *gorgonia.Node, pad int) (*gorgonia.Node, error) {
	if err := checkIntNode("padded positions", "ids", ids); err != nil {
		return nil, err
	}
	if ids.Dims() != 2 {
		return nil, fmt.Errorf("padded positions: ids %v must be (B, T)", ids.Shape())
	}
	return gorgonia.ApplyOp(&paddedPositionsOp{base: base{name: fmt.Sprintf("PaddedPositions(%d)", pad), arity: 1}, pad: pad}, ids)
}

type paddedPositionsOp struct {
	base
	pad int
}

func (op *paddedPositionsOp) Type() hm.Type {
	return sameType(1) // int (B, T) → int (B, T)
}

func (op *paddedPositionsOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return firstShape(op.name, in)
}

func (op *paddedPositionsOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ids, err := ints(op.name, vs[0])
	if err != nil {
		return nil, err
	}
	s := vs[0].Shape()
	out := op.output(tensor.Int, s, false)
	paddedPositions(ids, out.Data().([]int), s[1], op.pad)
	return out, nil
}

// paddedPositions writes the positions of ids (rows of t) into out.
func paddedPositions(ids, out []int, t, pad int) {
	for lo := 0; lo < len(ids); lo += t {
		n := 0
		for i := lo; i < lo+t; i++ {
			if ids[i] == pad {
				out[i] = pad
				continue
			}
			n++
			out[i] = pad + n
		}
	}
}

func (op *paddedPositionsOp) DiffWRT(int) []bool { return []bool{false} }

func (op *paddedPositionsOp) SymDiff(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
	return nil, fmt.Errorf("padded positions have no gradient: token ids are not differentiable")
}

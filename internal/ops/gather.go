package ops

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Gather picks rows of table (V, D) by integer ids of any shape (...): the
// result has shape (..., D). It is an embedding lookup, never a one-hot
// matmul. An id outside [0, V) is an error at run time. The gradient with
// respect to table is a scatter-add; ids get none.
func Gather(table, ids *gorgonia.Node) (*gorgonia.Node, error) {
	const name = "gather"
	if err := checkFloatNode(name, "table", table); err != nil {
		return nil, err
	}
	if err := checkIntNode(name, "ids", ids); err != nil {
		return nil, err
	}
	if table.Dims() != 2 {
		return nil, fmt.Errorf("gather: table %v must be 2-D (V, D)", table.Shape())
	}
	if ids.Dims() < 1 {
		return nil, fmt.Errorf("gather: ids must be at least 1-D, got %v", ids.Shape())
	}
	op := &gatherOp{base: base{name: "Gather", arity: 2}, idDims: ids.Dims(), vocab: table.Shape()[0], width: table.Shape()[1]}
	return gorgonia.ApplyOp(op, table, ids)
}

type gatherOp struct {
	base
	idDims       int
	vocab, width int
	grad         bool // (dy, ids) → dtable
}

func (op *gatherOp) Type() hm.Type {
	if op.grad {
		return hm.NewFnType(tt(op.idDims+1, typeA), tt(op.idDims, tensor.Int), tt(2, typeA))
	}
	return hm.NewFnType(tt(2, typeA), tt(op.idDims, tensor.Int), tt(op.idDims+1, typeA))
}

func (op *gatherOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	if op.grad {
		return tensor.Shape{op.vocab, op.width}, nil
	}
	s, err := shapes(op.name, in)
	if err != nil {
		return nil, err
	}
	return append(s[1].Clone(), op.width), nil
}

func (op *gatherOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs[0])
	if err != nil {
		return nil, err
	}
	ids, err := ints(op.name, vs[1])
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if id < 0 || id >= op.vocab {
			return nil, fmt.Errorf("gather: id %d at position %d is outside the table's %d rows", id, i, op.vocab)
		}
	}
	var out *tensor.Dense
	if op.grad {
		out = op.output(dt, tensor.Shape{op.vocab, op.width}, true) // scatter-add
	} else {
		idShape := vs[1].Shape()
		out = op.output(dt, append(idShape.Clone(), op.width), false)
	}
	if isFloat32(dt) {
		gatherKernel(data[float32](ts[0]), ids, data[float32](out), op.width, op.grad)
	} else {
		gatherKernel(data[float64](ts[0]), ids, data[float64](out), op.width, op.grad)
	}
	return out, nil
}

// gatherKernel copies table rows to out, or in grad mode adds rows of
// in (the output gradient) into out at the ids.
func gatherKernel[T Float](in []T, ids []int, out []T, w int, grad bool) {
	for i, id := range ids {
		if grad {
			dst, src := out[id*w:(id+1)*w], in[i*w:(i+1)*w]
			for j, v := range src {
				dst[j] += v
			}
		} else {
			copy(out[i*w:(i+1)*w], in[id*w:(id+1)*w])
		}
	}
}

func (op *gatherOp) DiffWRT(int) []bool { return []bool{true, false} }

func (op *gatherOp) SymDiff(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	g := &gatherOp{base: base{name: fmt.Sprintf("GatherGrad(%d,%d)", op.vocab, op.width), arity: 2}, idDims: op.idDims, vocab: op.vocab, width: op.width, grad: true}
	dt, err := gorgonia.ApplyOp(g, grad, in[1])
	if err != nil {
		return nil, fmt.Errorf("gather grad: %w", err)
	}
	return gorgonia.Nodes{dt, nil}, nil
}

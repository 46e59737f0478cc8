package ops

import (
	"fmt"
	"sync"

	"github.com/chewxy/hm"
	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Accuracy is the fraction of the rows of logits (..., C) whose highest
// score (the first, on ties, as torch.argmax) is at their int label (...),
// counting only the rows whose label is not ignore; 0 when every row is
// ignored. It is a scalar of the logits' dtype for reports, and has no
// gradient: it must not be on the path to a loss.
func Accuracy(logits, labels *gorgonia.Node, ignore int) (*gorgonia.Node, error) {
	const name = "accuracy"
	if err := checkFloatNode(name, "logits", logits); err != nil {
		return nil, err
	}
	if err := checkIntNode(name, "labels", labels); err != nil {
		return nil, err
	}
	ls, ts := logits.Shape(), labels.Shape()
	if logits.Dims() < 2 || !ls[:len(ls)-1].Eq(ts) {
		return nil, fmt.Errorf("accuracy: labels %v do not fit logits %v, want the logits' shape without its last dim", ts, ls)
	}
	op := &accuracyOp{base: base{name: fmt.Sprintf("Accuracy(%d)", ignore), arity: 2}, ignore: ignore, dims: logits.Dims()}
	return gorgonia.ApplyOp(op, logits, labels)
}

type accuracyOp struct {
	base
	ignore int
	dims   int
}

func (op *accuracyOp) Type() hm.Type {
	return hm.NewFnType(tt(op.dims, typeA), tt(op.dims-1, tensor.Int), typeA)
}

func (op *accuracyOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return tensor.ScalarShape(), nil
}

func (op *accuracyOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs[0])
	if err != nil {
		return nil, err
	}
	labels, err := ints(op.name, vs[1])
	if err != nil {
		return nil, err
	}
	c := ts[0].Shape()[ts[0].Dims()-1]
	var acc float64
	if isFloat32(dt) {
		acc = accuracyKernel(data[float32](ts[0]), labels, c, op.ignore)
		return gorgonia.NewF32(float32(acc)), nil
	}
	acc = accuracyKernel(data[float64](ts[0]), labels, c, op.ignore)
	return gorgonia.NewF64(acc), nil
}

func accuracyKernel[T Float](logits []T, labels []int, c, ignore int) float64 {
	// Rows are independent: spread over the cores (an MLM head's rows are
	// 30,522 wide, and one core took 3% of a BERT pretraining step).
	var mu sync.Mutex
	var right, counted int
	parallel.For(len(labels), c, func(lo, hi int) {
		r, n := accuracyRows(logits, labels[lo:hi], lo, c, ignore)
		mu.Lock()
		right, counted = right+r, counted+n
		mu.Unlock()
	})
	if counted == 0 {
		return 0
	}
	return float64(right) / float64(counted)
}

// accuracyRows counts the rows from first on whose first maximum is their
// label (right) and the rows not ignored (counted).
func accuracyRows[T Float](logits []T, labels []int, first, c, ignore int) (right, counted int) {
	for i, l := range labels {
		if l == ignore {
			continue
		}
		counted++
		row := logits[(first+i)*c : (first+i+1)*c]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		if best == l {
			right++
		}
	}
	return right, counted
}

func (op *accuracyOp) DiffWRT(int) []bool { return []bool{false, false} }

func (op *accuracyOp) SymDiff(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
	return nil, fmt.Errorf("accuracy has no gradient: report it, do not train on it")
}

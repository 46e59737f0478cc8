package ops

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// CrossEntropy is the mean softmax cross-entropy of logits (..., V) against
// integer targets (...), as torch.nn.functional.cross_entropy with
// reduction="mean": positions whose target is ignoreIndex count neither in
// the sum nor in the mean, and with label smoothing ε each row's loss is
// (1−ε)·(−log p_target) + ε·mean_j(−log p_j). It never materialises a
// one-hot. If every target is ignored the loss is 0 (PyTorch gives NaN).
// A target outside [0, V) that is not ignoreIndex is an error at run time.
func CrossEntropy(logits, targets *gorgonia.Node, ignoreIndex int, smoothing float64) (*gorgonia.Node, error) {
	const name = "cross entropy"
	if err := checkFloatNode(name, "logits", logits); err != nil {
		return nil, err
	}
	if err := checkIntNode(name, "targets", targets); err != nil {
		return nil, err
	}
	if !(smoothing >= 0 && smoothing <= 1) {
		return nil, fmt.Errorf("cross entropy: label smoothing %g must be in [0, 1]", smoothing)
	}
	ls, ts := logits.Shape(), targets.Shape()
	if logits.Dims() < 2 || !ls[:len(ls)-1].Eq(ts) {
		return nil, fmt.Errorf("cross entropy: targets %v do not fit logits %v, want the logits' shape without its last dim", ts, ls)
	}
	op := &xentOp{base: base{name: fmt.Sprintf("CrossEntropy(%d,%g)", ignoreIndex, smoothing), arity: 2}, ignore: ignoreIndex, smoothing: smoothing, dims: logits.Dims()}
	return gorgonia.ApplyOp(op, logits, targets)
}

type xentOp struct {
	base
	ignore    int
	smoothing float64
	dims      int
	grad      bool // (logits, targets, dloss) → dlogits
}

func (op *xentOp) Type() hm.Type {
	if op.grad {
		return hm.NewFnType(tt(op.dims, typeA), tt(op.dims-1, tensor.Int), typeA, tt(op.dims, typeA))
	}
	return hm.NewFnType(tt(op.dims, typeA), tt(op.dims-1, tensor.Int), typeA)
}

func (op *xentOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	if op.grad {
		s, err := shapes(op.name, in[:1])
		if err != nil {
			return nil, err
		}
		return s[0].Clone(), nil
	}
	return tensor.ScalarShape(), nil
}

func (op *xentOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs[0])
	if err != nil {
		return nil, err
	}
	tg, err := ints(op.name, vs[1])
	if err != nil {
		return nil, err
	}
	logits := ts[0]
	v := logits.Shape()[logits.Dims()-1]
	for i, t := range tg {
		if t != op.ignore && (t < 0 || t >= v) {
			return nil, fmt.Errorf("cross entropy: target %d at position %d is outside the %d classes [0, %d) and is not the ignore index %d", t, i, v, v, op.ignore)
		}
	}
	if op.grad {
		dl, err := scalar(op.name, vs[2])
		if err != nil {
			return nil, err
		}
		out := newDense(dt, logits.Shape())
		if isFloat32(dt) {
			xentKernel(data[float32](logits), tg, data[float32](out), v, op.ignore, op.smoothing, dl)
		} else {
			xentKernel(data[float64](logits), tg, data[float64](out), v, op.ignore, op.smoothing, dl)
		}
		return out, nil
	}
	var loss float64
	if isFloat32(dt) {
		loss = xentKernel(data[float32](logits), tg, nil, v, op.ignore, op.smoothing, 0)
		return gorgonia.NewF32(float32(loss)), nil
	}
	loss = xentKernel(data[float64](logits), tg, nil, v, op.ignore, op.smoothing, 0)
	return gorgonia.NewF64(loss), nil
}

// xentKernel returns the mean loss; when grad is non-nil it also writes
// dlogits = dloss·(p − (1−ε)·onehot − ε/V) / count.
func xentKernel[T Float](logits []T, targets []int, grad []T, v, ignore int, eps, dloss float64) float64 {
	count := 0
	for _, t := range targets {
		if t != ignore {
			count++
		}
	}
	if count == 0 {
		return 0
	}
	var total float64
	scale := dloss / float64(count)
	for r, t := range targets {
		if t == ignore {
			continue
		}
		row := logits[r*v : (r+1)*v]
		mx := math.Inf(-1)
		for _, x := range row {
			mx = max(mx, float64(x))
		}
		var sum, sumLogits float64
		for _, x := range row {
			sum += math.Exp(float64(x) - mx)
			sumLogits += float64(x)
		}
		lse := mx + math.Log(sum)
		nll := lse - float64(row[t])
		smooth := lse - sumLogits/float64(v) // mean_j −log p_j
		total += (1-eps)*nll + eps*smooth
		if grad != nil {
			g := grad[r*v : (r+1)*v]
			for j, x := range row {
				g[j] = T(scale * (math.Exp(float64(x)-lse) - eps/float64(v)))
			}
			g[t] -= T(scale * (1 - eps))
		}
	}
	return total / float64(count)
}

func (op *xentOp) DiffWRT(int) []bool { return []bool{true, false} }

func (op *xentOp) SymDiff(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	g := &xentOp{base: base{name: op.name + "Grad", arity: 3}, ignore: op.ignore, smoothing: op.smoothing, dims: op.dims, grad: true}
	dl, err := gorgonia.ApplyOp(g, in[0], in[1], grad)
	if err != nil {
		return nil, fmt.Errorf("cross entropy grad: %w", err)
	}
	return gorgonia.Nodes{dl, nil}, nil
}

package ops

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"github.com/d73a19ff/zoo/internal/parallel"
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
	op, err := newXent(logits, targets, ignoreIndex, smoothing)
	if err != nil {
		return nil, err
	}
	return gorgonia.ApplyOp(op, logits, targets)
}

// newXent checks CrossEntropy's arguments and returns its op.
func newXent(logits, targets *gorgonia.Node, ignoreIndex int, smoothing float64) (*xentOp, error) {
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
	return &xentOp{base: base{name: fmt.Sprintf("CrossEntropy(%d,%g)", ignoreIndex, smoothing), arity: 2}, ignore: ignoreIndex, smoothing: smoothing, dims: logits.Dims(), logits: ls.Clone()}, nil
}

// DistillCrossEntropy is CrossEntropy with a share alpha of each row's
// target taken from a teacher's distribution over the classes (token-level
// knowledge distillation: Hinton et al. 2015; Kim & Rush 2016's word-level
// distillation; Sun et al. 2019 for grapheme-to-phoneme): a row's loss is
//
//	(1−α)·[(1−ε)·(−log p_target) + ε·mean_j(−log p_j)] + α·Σ_j q_j·(−log p_j)
//
// with q the teacher's row of teacher (the logits' shape), averaged over
// the rows whose target is not ignoreIndex, as PyTorch's
// (1−α)·F.cross_entropy(logits, targets, label_smoothing=ε) +
// α·F.cross_entropy(logits, q) over those rows. Alpha 0 is CrossEntropy.
// Ignored rows' q is not read. The gradient with respect to the logits is
// (1−α)·(p − (1−ε)·onehot − ε/V) + α·(Σq·p − q) per row, divided by the
// rows counted; the teacher gets none.
func DistillCrossEntropy(logits, targets, teacher *gorgonia.Node, ignoreIndex int, smoothing, alpha float64) (*gorgonia.Node, error) {
	const name = "distillation cross entropy"
	if err := checkFloatNode(name, "teacher", teacher); err != nil {
		return nil, err
	}
	if !(alpha >= 0 && alpha <= 1) {
		return nil, fmt.Errorf("%s: alpha %g must be in [0, 1]", name, alpha)
	}
	if !teacher.Shape().Eq(logits.Shape()) {
		return nil, fmt.Errorf("%s: teacher %v does not fit logits %v, want the same shape", name, teacher.Shape(), logits.Shape())
	}
	if teacher.Dtype() != logits.Dtype() {
		return nil, fmt.Errorf("%s: teacher is %v, logits %v", name, teacher.Dtype(), logits.Dtype())
	}
	op, err := newXent(logits, targets, ignoreIndex, smoothing)
	if err != nil {
		return nil, err
	}
	op.name, op.arity, op.alpha, op.distill = fmt.Sprintf("DistillCrossEntropy(%d,%g,%g)", ignoreIndex, smoothing, alpha), 3, alpha, true
	return gorgonia.ApplyOp(op, logits, targets, teacher)
}

type xentOp struct {
	base
	ignore    int
	smoothing float64
	distill   bool    // DistillCrossEntropy: a third input, the teacher
	alpha     float64 // the teacher's share of the target
	dims      int
	logits    tensor.Shape
	wantGrad  bool          // set by SymDiff: forward runs also keep the gradient
	cache     *tensor.Dense // d(loss)/d(logits) of the last forward run
	fwd       *xentOp       // on the gradient op: the forward op whose cache it scales
}

func (op *xentOp) Type() hm.Type {
	if op.fwd != nil { // (loss, dloss) → dlogits; loss orders it after the forward
		return hm.NewFnType(typeA, typeA, tt(op.dims, typeA))
	}
	if op.distill {
		return hm.NewFnType(tt(op.dims, typeA), tt(op.dims-1, tensor.Int), tt(op.dims, typeA), typeA)
	}
	return hm.NewFnType(tt(op.dims, typeA), tt(op.dims-1, tensor.Int), typeA)
}

func (op *xentOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	if op.fwd != nil {
		return op.logits.Clone(), nil
	}
	return tensor.ScalarShape(), nil
}

func (op *xentOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	if op.fwd != nil {
		return op.scaleCache(vs[1])
	}
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
	op.cache = nil
	if op.wantGrad {
		op.cache = op.output(dt, logits.Shape(), false) // xentKernel writes every row
	}
	if op.distill {
		q, qt, err := floats(op.name, vs[2])
		if err != nil {
			return nil, err
		}
		if qt != dt || !q[0].Shape().Eq(logits.Shape()) {
			return nil, fmt.Errorf("%s: teacher %v %v does not fit logits %v %v", op.name, qt, q[0].Shape(), dt, logits.Shape())
		}
		if isFloat32(dt) {
			return gorgonia.NewF32(float32(distillKernel(data[float32](logits), tg, data[float32](q[0]), cacheOf[float32](op.cache), v, op.ignore, op.smoothing, op.alpha, distillRow32))), nil
		}
		return gorgonia.NewF64(distillKernel(data[float64](logits), tg, data[float64](q[0]), cacheOf[float64](op.cache), v, op.ignore, op.smoothing, op.alpha, distillRow[float64])), nil
	}
	if isFloat32(dt) {
		return gorgonia.NewF32(float32(xentKernel(data[float32](logits), tg, cacheOf[float32](op.cache), v, op.ignore, op.smoothing, xentRow32))), nil
	}
	return gorgonia.NewF64(xentKernel(data[float64](logits), tg, cacheOf[float64](op.cache), v, op.ignore, op.smoothing, xentRow[float64])), nil
}

func cacheOf[T Float](d *tensor.Dense) []T {
	if d == nil {
		return nil
	}
	return data[T](d)
}

// scaleCache returns dloss times the gradient cached by the forward run.
func (op *xentOp) scaleCache(dloss gorgonia.Value) (gorgonia.Value, error) {
	dl, err := scalar(op.name, dloss)
	if err != nil {
		return nil, err
	}
	c := op.fwd.cache
	if c == nil {
		return nil, fmt.Errorf("%s: gradient ran before its forward pass", op.name)
	}
	if dl == 1 {
		// The usual case (the loss is the graph's root, or a sum of
		// losses): the cached gradient is the answer. The forward run
		// rewrites the whole cache, and nothing else reads it, so handing
		// it on saves one pass over (N, V) scores.
		return c, nil
	}
	out := op.output(c.Dtype(), c.Shape(), false)
	if isFloat32(c.Dtype()) {
		src, dst := data[float32](c), data[float32](out)
		parallel.For(len(src), 1, func(lo, hi int) { vecAffine(src[lo:hi], dst[lo:hi], float32(dl), 0) })
	} else {
		scaleInto(data[float64](c), data[float64](out), dl)
	}
	return out, nil
}

func scaleInto[T Float](x, out []T, s T) {
	for i, v := range x {
		out[i] = v * s
	}
}

// xentKernel returns the mean loss; when grad is non-nil it also writes
// d(mean loss)/d(logits) = (p − (1−ε)·onehot − ε/V) / count, in the same
// pass, so each exp is computed once, and zeros for ignored rows. Rows run
// in parallel (rowsKernel), each through xentRow (xentRow32 in float32).
func xentKernel[T Float](logits []T, targets []int, grad []T, v, ignore int, eps float64, xentRow func(row []T, t int, g []T, eps, inv float64) float64) float64 {
	return rowsKernel(targets, grad, v, 2*v, ignore, func(r, t int, g []T, inv float64) float64 {
		return xentRow(logits[r*v:(r+1)*v], t, g, eps, inv)
	})
}

// rowsKernel runs loss(r, t, g, inv) for every row r whose target t is not
// ignore, in parallel (cost a row's work for parallel.For), with g the
// row's slice of grad (nil without one) and inv 1/the rows counted, zeroes
// the ignored rows' gradient, and returns the mean of the rows' losses (0
// when every row is ignored).
func rowsKernel[T Float](targets []int, grad []T, v, cost, ignore int, loss func(r, t int, g []T, inv float64) float64) float64 {
	count := 0
	for _, t := range targets {
		if t != ignore {
			count++
		}
	}
	if count == 0 {
		clear(grad)
		return 0
	}
	rowLoss := make([]float64, len(targets))
	inv := 1 / float64(count)
	parallel.For(len(targets), cost, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			if t := targets[r]; t != ignore {
				var g []T
				if grad != nil {
					g = grad[r*v : (r+1)*v]
				}
				rowLoss[r] = loss(r, t, g, inv)
			} else if grad != nil {
				clear(grad[r*v : (r+1)*v])
			}
		}
	})
	var total float64
	for _, l := range rowLoss {
		total += l
	}
	return total * inv
}

// xentRow returns one row's smoothed loss and, if g is not nil, writes its
// gradient scaled by inv.
func xentRow[T Float](row []T, t int, g []T, eps, inv float64) float64 {
	v := float64(len(row))
	mx := math.Inf(-1)
	for _, x := range row {
		if float64(x) > mx {
			mx = float64(x)
		}
	}
	var sum, sumLogits float64
	for j, x := range row {
		e := expOf[T](float64(x) - mx)
		sum += e
		sumLogits += float64(x)
		if g != nil {
			g[j] = T(e)
		}
	}
	lse := mx + math.Log(sum)
	nll := lse - float64(row[t])
	smooth := lse - sumLogits/v // mean_j −log p_j
	if g != nil {
		for j := range g {
			g[j] = T(inv * (float64(g[j])/sum - eps/v))
		}
		g[t] -= T(inv * (1 - eps))
	}
	return (1-eps)*nll + eps*smooth
}

func (op *xentOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	d[0] = true
	return d
}

func (op *xentOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	op.wantGrad = true
	g := &xentOp{base: base{name: op.name + "Grad", arity: 2}, dims: op.dims, logits: op.logits, fwd: op}
	dl, err := gorgonia.ApplyOp(g, out, grad)
	if err != nil {
		return nil, fmt.Errorf("cross entropy grad: %w", err)
	}
	grads := make(gorgonia.Nodes, len(in))
	grads[0] = dl
	return grads, nil
}

// distillKernel is xentKernel for DistillCrossEntropy: q holds the
// teacher's rows; each row goes through distillRow (distillRow32 in
// float32).
func distillKernel[T Float](logits []T, targets []int, q, grad []T, v, ignore int, eps, alpha float64, distillRow func(row []T, t int, q, g []T, eps, alpha, inv float64) float64) float64 {
	return rowsKernel(targets, grad, v, 3*v, ignore, func(r, t int, g []T, inv float64) float64 {
		return distillRow(logits[r*v:(r+1)*v], t, q[r*v:(r+1)*v], g, eps, alpha, inv)
	})
}

// distillRow returns one row's loss and, if g is not nil, writes its
// gradient scaled by inv.
func distillRow[T Float](row []T, t int, q, g []T, eps, alpha, inv float64) float64 {
	v := float64(len(row))
	mx := math.Inf(-1)
	for _, x := range row {
		mx = max(mx, float64(x))
	}
	var sum, sumLogits, sumQ, qx float64
	for j, x := range row {
		e := expOf[T](float64(x) - mx)
		sum += e
		sumLogits += float64(x)
		sumQ += float64(q[j])
		qx += float64(q[j]) * float64(x)
		if g != nil {
			g[j] = T(e)
		}
	}
	lse := mx + math.Log(sum)
	hard := (1-eps)*(lse-float64(row[t])) + eps*(lse-sumLogits/v)
	soft := sumQ*lse - qx // Σ_j q_j·(lse − x_j)
	if g != nil {
		for j := range g {
			p := float64(g[j]) / sum
			g[j] = T(inv * ((1-alpha)*(p-eps/v) + alpha*(sumQ*p-float64(q[j]))))
		}
		g[t] -= T(inv * (1 - alpha) * (1 - eps))
	}
	return (1-alpha)*hard + alpha*soft
}

// distillRow32 is distillRow on the row primitives of vec.go: the exps
// with their sum, the sums Σx, Σq and Σq·x, then the gradient
// inv·(p·((1−α) + α·Σq) − (1−α)·ε/V − α·q) as an affine map and an axpy.
func distillRow32(row []float32, t int, q, g []float32, eps, alpha, inv float64) float64 {
	v := float64(len(row))
	mx := vecMax(row)
	sum := float64(vecExpShift(row, nil, g, 1, mx))
	lse := float64(mx) + math.Log(sum)
	hard := (1-eps)*(lse-float64(row[t])) + eps*(lse-float64(vecSum(row))/v)
	sumQ := float64(vecSum(q))
	soft := sumQ*lse - float64(vecDot(q, row))
	if g != nil {
		vecAffine(g, g, float32(inv*((1-alpha)+alpha*sumQ)/sum), float32(-inv*(1-alpha)*eps/v))
		vecAxpy(q, g, float32(-inv*alpha))
		g[t] -= float32(inv * (1 - alpha) * (1 - eps))
	}
	return (1-alpha)*hard + alpha*soft
}

// xentRow32 is xentRow on the row primitives of vec.go: the max, then the
// exps (stored in g when there is one) with their sum, then the gradient's
// affine map (p − ε/V)·inv in place.
func xentRow32(row []float32, t int, g []float32, eps, inv float64) float64 {
	v := float64(len(row))
	mx := vecMax(row)
	sum := float64(vecExpShift(row, nil, g, 1, mx))
	lse := float64(mx) + math.Log(sum)
	nll := lse - float64(row[t])
	smooth := lse - float64(vecSum(row))/v // mean_j −log p_j
	if g != nil {
		vecAffine(g, g, float32(inv/sum), float32(-inv*eps/v))
		g[t] -= float32(inv * (1 - eps))
	}
	return (1-eps)*nll + eps*smooth
}

// bufBytes implements bufSizer: the forward op's buffer is the gradient
// it caches, of the logits' shape; the gradient op returns that cache
// (allocating its own buffer only for a loss scaled by other than 1).
func (op *xentOp) bufBytes(n *gorgonia.Node) (buf, side int64, outputInBuf bool) {
	if op.fwd != nil || !op.wantGrad {
		return 0, 0, false
	}
	dt, err := dtypeOf(n)
	if err != nil {
		return 0, 0, false
	}
	return int64(op.logits.TotalSize()) * int64(dt.Size()), 0, false
}

// forwardBase implements forwarded.
func (op *xentOp) forwardBase() (*base, bool) {
	if op.fwd == nil {
		return nil, false
	}
	return &op.fwd.base, true
}

package ops

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Attention is scaled dot-product attention in one op that never
// materialises the (N, Tq, Tk) score matrix: FlashAttention (Dao, Fu,
// Ermon, Rudra & Ré 2022, "FlashAttention: fast and memory-efficient exact
// attention with IO-awareness") in the work partitioning of FlashAttention-2
// (Dao 2023, "FlashAttention-2: faster attention with better parallelism and
// work partitioning", Algorithms 1 and 2), on the CPU.
//
// q is (N, Tq, d), k is (Nk, Tk, d) and v is (Nk, Tk, dv), with N = B·h
// and Nk = B·kvh, kvh dividing h; the result is the context (N, Tq, dv).
// With Nk < N (grouped-query attention) row z of q reads row z/(N/Nk) of k
// and v, each key-value head serving N/Nk query heads in a row, as Hugging
// Face's repeat_kv lays them out, without the keys and values ever being
// repeated; the gradients of k and v sum over each group. It equals
//
//	BatchedMatMul(CausalSoftmax(BatchedMatMul(q, k, false, true), mask, scale, causalOffset), v, false, false)
//
// up to rounding, with the same conventions: mask, which may be nil, is a
// key-padding mask (B, Tk) with 1 (any non-zero) for a key to attend to and
// 0 for padding, and row b·h+i of q takes mask row b; query i sees key j
// only when j ≤ i + causalOffset, unless causalOffset is NoCausal; a query
// that sees no key gets a zero context row and zero gradients, never NaN.
//
// Only keys that some query of a block can see are read: keys after the
// last 1 of a mask row and key tiles wholly past the causal limit are
// skipped, so a decoding step over a KV cache of capacity C with n occupied
// slots costs O(n), not O(C). Besides its output the op keeps, for the
// gradient, one log-sum-exp per query row (N·Tq values); the gradient
// recomputes the probabilities tile by tile from it.
func Attention(q, k, v, mask *gorgonia.Node, scale float64, causalOffset int) (*gorgonia.Node, error) {
	const name = "flash attention"
	for _, in := range []struct {
		n    *gorgonia.Node
		what string
	}{{q, "queries"}, {k, "keys"}, {v, "values"}} {
		if err := checkFloatNode(name, in.what, in.n); err != nil {
			return nil, err
		}
		if in.n.Dims() != 3 {
			return nil, fmt.Errorf("flash attention: %s %v must be (B·heads, T, d)", in.what, in.n.Shape())
		}
	}
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	if ks[0] == 0 || qs[0]%ks[0] != 0 || vs[0] != ks[0] || ks[2] != qs[2] || vs[1] != ks[1] {
		return nil, fmt.Errorf("flash attention: queries %v, keys %v and values %v do not fit, want (N, Tq, d), (Nk, Tk, d) and (Nk, Tk, dv) with Nk dividing N", qs, ks, vs)
	}
	if dq, dk, dv := q.Dtype(), k.Dtype(), v.Dtype(); dq != dk || dq != dv {
		return nil, fmt.Errorf("flash attention: queries, keys and values have dtypes %v, %v and %v", dq, dk, dv)
	}
	if math.IsNaN(scale) || math.IsInf(scale, 0) {
		return nil, fmt.Errorf("flash attention: scale %g must be finite", scale)
	}
	causal := causalOffset != NoCausal
	op := &flashOp{base: base{name: fmt.Sprintf("FlashAttention(%g,%v,%d)", scale, causal, causalOffset), arity: 3},
		scale: scale, causal: causal, offset: causalOffset}
	args := gorgonia.Nodes{q, k, v}
	if mask != nil {
		if err := checkKeyMask(name, mask, qs[0], ks[1]); err != nil {
			return nil, err
		}
		if mask.Dtype() != q.Dtype() {
			return nil, fmt.Errorf("flash attention: mask has dtype %v, queries %v", mask.Dtype(), q.Dtype())
		}
		op.arity = 4
		args = append(args, mask)
	}
	return gorgonia.ApplyOp(op, args...)
}

// flashOp maps (q, k, v[, mask]) to the context.
type flashOp struct {
	base
	scale  float64
	causal bool
	offset int // with causal: query i sees keys j ≤ i + offset
	// wantLSE is set by SymDiff: forward runs then keep lse, the
	// log-sum-exp of each query row's scaled scores over the keys it sees
	// (+Inf for a row that sees none), (N·Tq), which the gradient op reads
	// in the same run.
	wantLSE bool
	lse     []float64
	bf16    bool // tile products in bfloat16 (UseBF16), the gradient's too
}

func (op *flashOp) Type() hm.Type {
	ts := []hm.Type{tt(3, typeA), tt(3, typeA), tt(3, typeA)}
	if op.arity == 4 {
		ts = append(ts, tt(2, typeA))
	}
	return hm.NewFnType(append(ts, tt(3, typeA))...)
}

func (op *flashOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(op.name, in[:3])
	if err != nil {
		return nil, err
	}
	return tensor.Shape{s[0][0], s[0][1], s[2][2]}, nil
}

// flashShape reads the problem's sizes off q, k, v and the mask (or nil).
func (op *flashOp) flashShape(q, k, v, mask *tensor.Dense) flashShape {
	p := flashShape{n: q.Shape()[0], tq: q.Shape()[1], tk: k.Shape()[1], d: q.Shape()[2], dv: v.Shape()[2],
		scale: op.scale, causal: op.causal, offset: op.offset, heads: 1, group: q.Shape()[0] / max(k.Shape()[0], 1), bf16: op.bf16}
	if mask != nil {
		p.heads = p.n / mask.Shape()[0]
	}
	return p
}

func (op *flashOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	var mask *tensor.Dense
	if len(ts) == 4 {
		mask = ts[3]
	}
	if err := checkFlashValues(op.name, ts[0], ts[1], ts[2], mask); err != nil {
		return nil, err
	}
	p := op.flashShape(ts[0], ts[1], ts[2], mask)
	out := op.output(dt, tensor.Shape{p.n, p.tq, p.dv}, false) // every row is written
	var lse []float64
	if op.wantLSE {
		if len(op.lse) != p.n*p.tq {
			op.lse = make([]float64, p.n*p.tq)
		}
		lse = op.lse
	}
	if isFloat32(dt) {
		flashForward(data[float32](ts[0]), data[float32](ts[1]), data[float32](ts[2]), maskData[float32](mask), data[float32](out), lse, p)
	} else {
		flashForward(data[float64](ts[0]), data[float64](ts[1]), data[float64](ts[2]), maskData[float64](mask), data[float64](out), lse, p)
	}
	return out, nil
}

// checkFlashValues repeats the build-time shape checks on the run's values,
// which Let may have replaced.
func checkFlashValues(name string, q, k, v, mask *tensor.Dense) error {
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	if len(qs) != 3 || len(ks) != 3 || len(vs) != 3 || ks[0] == 0 || qs[0]%ks[0] != 0 || vs[0] != ks[0] || ks[2] != qs[2] || vs[1] != ks[1] {
		return fmt.Errorf("%s: queries %v, keys %v and values %v do not fit", name, qs, ks, vs)
	}
	if mask != nil {
		ms := mask.Shape()
		if len(ms) != 2 || ms[1] != ks[1] || ms[0] == 0 || qs[0]%ms[0] != 0 {
			return fmt.Errorf("%s: mask %v does not fit keys %v", name, ms, ks)
		}
	}
	return nil
}

func maskData[T Float](m *tensor.Dense) []T {
	if m == nil {
		return nil
	}
	return data[T](m)
}

func (op *flashOp) DiffWRT(n int) []bool {
	if n == 4 {
		return []bool{true, true, true, false}
	}
	return []bool{true, true, true}
}

// SymDiff builds one gradient op, which computes dq, dk and dv together
// into one packed tensor, and three ops that copy them out.
func (op *flashOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	op.wantLSE = true
	args := gorgonia.Nodes{in[0], in[1], in[2], out, grad}
	if op.arity == 4 {
		args = append(args, in[3])
	}
	g := &flashGradOp{base: base{name: op.name + "Grad", arity: len(args)}, fwd: op}
	packed, err := gorgonia.ApplyOp(g, args...)
	if err != nil {
		return nil, fmt.Errorf("flash attention grad: %w", err)
	}
	grads := make(gorgonia.Nodes, len(in))
	off := 0
	for i := range 3 {
		sh := in[i].Shape().Clone()
		group := in[0].Shape()[0] / sh[0] // query heads per head of this input
		part := &flashPartOp{base: base{name: fmt.Sprintf("FlashAttentionGradPart(%d,%d,%v,%d)", i, off, sh, group), arity: 1}, off: off, shape: sh, group: group}
		if grads[i], err = gorgonia.ApplyOp(part, packed); err != nil {
			return nil, fmt.Errorf("flash attention grad %d: %w", i, err)
		}
		off += sh.TotalSize() * group
	}
	return grads, nil
}

// flashGradOp maps (q, k, v, out, dout[, mask]) to one vector holding dq,
// dk and dv one after the other, then D = rowsum(dout ⊙ out) (N·Tq), which
// the kernel needs once per query row. dk and dv have one head per query
// head, (N, Tk, d) and (N, Tk, dv): with grouped-query attention the part
// ops sum each group's heads.
type flashGradOp struct {
	base
	fwd *flashOp // whose lse of this run the gradient reads
}

func (op *flashGradOp) Type() hm.Type {
	ts := []hm.Type{tt(3, typeA), tt(3, typeA), tt(3, typeA), tt(3, typeA), tt(3, typeA)}
	if op.arity == 6 {
		ts = append(ts, tt(2, typeA))
	}
	return hm.NewFnType(append(ts, tt(1, typeA))...)
}

// flashPackedSize is the length of the gradient op's output.
func flashPackedSize(q, k, v tensor.Shape) int {
	return q.TotalSize() + q[0]*k[1]*k[2] + q[0]*v[1]*v[2] + q[0]*q[1]
}

func (op *flashGradOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(op.name, in[:3])
	if err != nil {
		return nil, err
	}
	return tensor.Shape{flashPackedSize(s[0], s[1], s[2])}, nil
}

func (op *flashGradOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	var mask *tensor.Dense
	if len(ts) == 6 {
		mask = ts[5]
	}
	q, k, v, o, do := ts[0], ts[1], ts[2], ts[3], ts[4]
	if err := checkFlashValues(op.name, q, k, v, mask); err != nil {
		return nil, err
	}
	p := op.fwd.flashShape(q, k, v, mask)
	if len(op.fwd.lse) != p.n*p.tq {
		return nil, fmt.Errorf("%s: the forward op has not run", op.name)
	}
	want := tensor.Shape{p.n, p.tq, p.dv}
	if !o.Shape().Eq(want) || !do.Shape().Eq(want) {
		return nil, fmt.Errorf("%s: output %v and its gradient %v must be %v", op.name, o.Shape(), do.Shape(), want)
	}
	// Zeroed: key blocks no query sees, and rows that see no key, get no
	// contribution.
	out := op.output(dt, tensor.Shape{flashPackedSize(q.Shape(), k.Shape(), v.Shape())}, true)
	if isFloat32(dt) {
		flashBackward(data[float32](q), data[float32](k), data[float32](v), data[float32](o), data[float32](do), maskData[float32](mask), op.fwd.lse, data[float32](out), p)
	} else {
		flashBackward(data[float64](q), data[float64](k), data[float64](v), data[float64](o), data[float64](do), maskData[float64](mask), op.fwd.lse, data[float64](out), p)
	}
	return out, nil
}

// flashPartOp copies one gradient, of the given shape, out of the packed
// vector from offset off; with group > 1 the packed vector holds group
// consecutive heads for each of shape's, which it sums in order.
type flashPartOp struct {
	base
	off   int
	shape tensor.Shape
	group int
}

func (op *flashPartOp) Type() hm.Type { return hm.NewFnType(tt(1, typeA), tt(len(op.shape), typeA)) }

func (op *flashPartOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return op.shape.Clone(), nil
}

func (op *flashPartOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	n, group := op.shape.TotalSize(), max(op.group, 1)
	if ts[0].Size() < op.off+n*group {
		return nil, fmt.Errorf("%s: packed gradient of %d elements is too short", op.name, ts[0].Size())
	}
	out := op.output(dt, op.shape, false)
	if isFloat32(dt) {
		flashSumGroups(data[float32](out), data[float32](ts[0])[op.off:op.off+n*group], op.shape[0], group)
	} else {
		flashSumGroups(data[float64](out), data[float64](ts[0])[op.off:op.off+n*group], op.shape[0], group)
	}
	return out, nil
}

// flashSumGroups writes into out (heads rows) the sums of each row's group
// consecutive rows of in, in order; with group 1 it copies.
func flashSumGroups[T Float](out, in []T, heads, group int) {
	if group == 1 {
		copy(out, in)
		return
	}
	size := len(out) / max(heads, 1)
	for h := range heads {
		o := out[h*size:][:size]
		copy(o, in[h*group*size:][:size])
		for i := 1; i < group; i++ {
			for e, v := range in[(h*group+i)*size:][:size] {
				o[e] += v
			}
		}
	}
}

package ops

import (
	"fmt"

	"github.com/chewxy/hm"
	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BatchedMatMul multiplies matrices batch by batch: op(a) (N, M, K) times
// op(b) (N, K, P) is (N, M, P), where op transposes the last two dims when
// its flag is set. Both inputs must have the same batch size N.
func BatchedMatMul(a, b *gorgonia.Node, transA, transB bool) (*gorgonia.Node, error) {
	const name = "batched matmul"
	if err := checkFloatNode(name, "a", a); err != nil {
		return nil, err
	}
	if err := checkFloatNode(name, "b", b); err != nil {
		return nil, err
	}
	if a.Dims() != 3 || b.Dims() != 3 {
		return nil, fmt.Errorf("batched matmul: inputs %v and %v must be 3-D", a.Shape(), b.Shape())
	}
	op := &bmmOp{base: base{name: fmt.Sprintf("BatchedMatMul(%v,%v)", transA, transB), arity: 2}, tA: transA, tB: transB}
	_, k, k2, _ := op.dims(a.Shape(), b.Shape())
	if a.Shape()[0] != b.Shape()[0] || k != k2 {
		return nil, fmt.Errorf("batched matmul: %v (transposed %v) and %v (transposed %v) do not fit: batch %d vs %d, inner %d vs %d",
			a.Shape(), transA, b.Shape(), transB, a.Shape()[0], b.Shape()[0], k, k2)
	}
	return gorgonia.ApplyOp(op, a, b)
}

type bmmOp struct {
	base
	tA, tB bool
	bf16   bool // products in bfloat16 (UseBF16)
}

// dims returns op(a) as (m, k) and op(b) as (k2, p).
func (op *bmmOp) dims(a, b tensor.Shape) (m, k, k2, p int) {
	m, k = a[1], a[2]
	if op.tA {
		m, k = k, m
	}
	k2, p = b[1], b[2]
	if op.tB {
		k2, p = p, k2
	}
	return m, k, k2, p
}

func (op *bmmOp) Type() hm.Type { return hm.NewFnType(tt(3, typeA), tt(3, typeA), tt(3, typeA)) }

func (op *bmmOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(op.name, in)
	if err != nil {
		return nil, err
	}
	m, _, _, p := op.dims(s[0], s[1])
	return tensor.Shape{s[0][0], m, p}, nil
}

func (op *bmmOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	a, b := ts[0], ts[1]
	n := a.Shape()[0]
	m, k, _, p := op.dims(a.Shape(), b.Shape())
	out := op.output(dt, tensor.Shape{n, m, p}, false)
	if isFloat32(dt) {
		bmmKernel(op.bf16, data[float32](a), data[float32](b), data[float32](out), n, m, k, p, op.tA, op.tB)
	} else {
		bmmKernel(false, data[float64](a), data[float64](b), data[float64](out), n, m, k, p, op.tA, op.tB)
	}
	return out, nil
}

func bmmKernel[T Float](bf16 bool, a, b, c []T, n, m, k, p int, tA, tB bool) {
	parallel.For(n, m*k*p/16, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gemmAs(bf16, tA, tB, m, p, k, a[i*m*k:(i+1)*m*k], b[i*k*p:(i+1)*k*p], 0, c[i*m*p:(i+1)*m*p])
		}
	})
}

func (op *bmmOp) DiffWRT(int) []bool { return []bool{true, true} }

// SymDiff uses, for C = op(A)·op(B) with upstream gradient G:
// NN: dA = G·Bᵀ, dB = Aᵀ·G;  NT: dA = G·B, dB = Gᵀ·A;
// TN: dA = B·Gᵀ, dB = A·G;   TT: dA = Bᵀ·Gᵀ, dB = Gᵀ·Aᵀ.
func (op *bmmOp) SymDiff(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
	a, b := in[0], in[1]
	var da, db *gorgonia.Node
	var err1, err2 error
	switch {
	case !op.tA && !op.tB:
		da, err1 = BatchedMatMul(g, b, false, true)
		db, err2 = BatchedMatMul(a, g, true, false)
	case !op.tA && op.tB:
		da, err1 = BatchedMatMul(g, b, false, false)
		db, err2 = BatchedMatMul(g, a, true, false)
	case op.tA && !op.tB:
		da, err1 = BatchedMatMul(b, g, false, true)
		db, err2 = BatchedMatMul(a, g, false, false)
	default:
		da, err1 = BatchedMatMul(b, g, true, true)
		db, err2 = BatchedMatMul(g, a, true, true)
	}
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("batched matmul grad: %v %v", err1, err2)
	}
	return gorgonia.Nodes{da, db}, nil
}

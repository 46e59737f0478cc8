package ops

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// impl is the BLAS every matrix product in the project goes through.
var impl gonum.Implementation

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// gemm computes c = op(a)·op(b) + beta·c for row-major matrices, where op(a)
// is (m, k), op(b) is (k, n) and c is (m, n). a, b and c are dense: their
// leading dimensions are their stored row lengths.
func gemm[T Float](tA, tB bool, m, n, k int, a, b []T, beta T, c []T) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 { // op(a)·op(b) is all zeros; BLAS rejects a zero leading dimension
		for i := range c[:m*n] {
			if beta == 0 {
				c[i] = 0 // BLAS: beta = 0 does not read C
			} else {
				c[i] *= beta
			}
		}
		return
	}
	lda, ldb := k, n
	if tA {
		lda = m
	}
	if tB {
		ldb = k
	}
	switch c := any(c).(type) {
	case []float32:
		impl.Sgemm(trans(tA), trans(tB), m, n, k, 1, any(a).([]float32), lda, any(b).([]float32), ldb, float32(beta), c, n)
	case []float64:
		impl.Dgemm(trans(tA), trans(tB), m, n, k, 1, any(a).([]float64), lda, any(b).([]float64), ldb, float64(beta), c, n)
	}
}

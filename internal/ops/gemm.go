package ops

import kernels "github.com/d73a19ff/zoo/internal/gemm"

// Every matrix product in the project goes through gemm, which calls sgemm
// or dgemm: the pure-Go default (gemm_default.go) or, built with
// -tags openblas, OpenBLAS through cgo (gemm_openblas.go).

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
	lda, ldb := kernels.DenseStrides(tA, tB, m, n, k)
	switch c := any(c).(type) {
	case []float32:
		sgemm(tA, tB, m, n, k, any(a).([]float32), lda, any(b).([]float32), ldb, float32(beta), c, n)
	case []float64:
		dgemm(tA, tB, m, n, k, any(a).([]float64), lda, any(b).([]float64), ldb, float64(beta), c, n)
	}
}

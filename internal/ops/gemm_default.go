//go:build !openblas

package ops

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// GEMMBackend names the matrix-multiply implementation this build uses.
const GEMMBackend = "gonum"

var impl gonum.Implementation

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// sgemm is row-major C = op(A)·op(B) + beta·C in float32.
func sgemm(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	impl.Sgemm(trans(tA), trans(tB), m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
}

// dgemm is sgemm in float64.
func dgemm(tA, tB bool, m, n, k int, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	impl.Dgemm(trans(tA), trans(tB), m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
}

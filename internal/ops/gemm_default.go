//go:build !openblas

package ops

import kernels "github.com/d73a19ff/zoo/internal/gemm"

// GEMMBackend names the matrix-multiply implementation this build uses.
const GEMMBackend = "zoo (pure Go + assembly)"

// sgemm is row-major C = op(A)·op(B) + beta·C in float32, through the
// project's blocked kernel (internal/gemm).
func sgemm(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	kernels.Sgemm(tA, tB, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
}

// sgemmBias is row-major C = op(A)·op(B) + bias added to every row, with
// the bias written into C tile by tile inside the blocked product.
func sgemmBias(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, bias, c []float32, ldc int) {
	kernels.SgemmBias(tA, tB, m, n, k, a, lda, b, ldb, bias, c, ldc)
}

// dgemm is sgemm in float64 (gonum's; float64 is for tests).
func dgemm(tA, tB bool, m, n, k int, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	kernels.Dgemm(tA, tB, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
}

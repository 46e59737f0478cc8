//go:build openblas

package ops

// Built with -tags openblas, matrix products run in OpenBLAS through cgo
// (internal/cblas). Needs the C library and headers: apt-get install
// libopenblas-dev.
//
// OpenBLAS runs single-threaded and large products are split by rows across
// goroutines, as the pure-Go kernel does: OpenBLAS's own threads spin while
// the element-wise kernels want the cores, and measured slower that way.

import (
	"github.com/d73a19ff/zoo/internal/cblas"
	"github.com/d73a19ff/zoo/internal/parallel"
)

// GEMMBackend names the matrix-multiply implementation this build uses.
const GEMMBackend = "openblas"

// splitWork is the product size (m·n·k) from which sgemm splits rows.
const splitWork = 1 << 21

// sgemm is row-major C = op(A)·op(B) + beta·C in float32.
func sgemm(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m*n*k < splitWork {
		cblas.Sgemm(tA, tB, m, n, k, a, lda, b, ldb, beta, c, ldc)
		return
	}
	parallel.For(m, parallel.MinWork, func(lo, hi int) {
		off := lo * lda // rows of A…
		if tA {
			off = lo // …or its columns when stored transposed
		}
		cblas.Sgemm(tA, tB, hi-lo, n, k, a[off:], lda, b, ldb, beta, c[lo*ldc:], ldc)
	})
}

// sgemmBias is row-major C = op(A)·op(B) + bias added to every row: the
// bias rows are copied into C, then sgemm adds the product (beta 1).
func sgemmBias(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, bias, c []float32, ldc int) {
	for r := 0; r < m; r++ {
		copy(c[r*ldc:][:n], bias)
	}
	sgemm(tA, tB, m, n, k, a, lda, b, ldb, 1, c, ldc)
}

// dgemm is sgemm in float64.
func dgemm(tA, tB bool, m, n, k int, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	cblas.Dgemm(tA, tB, m, n, k, a, lda, b, ldb, beta, c, ldc)
}

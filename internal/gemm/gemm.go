// Package gemm is a pure-Go (plus Go assembly) matrix multiply for row-major
// float32 matrices, organised after Goto & van de Geijn, "Anatomy of
// high-performance matrix multiplication" (ACM TOMS 34(3), 2008), as
// refactored in BLIS (Van Zee & van de Geijn, ACM TOMS 41(3), 2015): blocks
// of op(A) and op(B) are packed into contiguous micro-panels, and an mr×nr
// register-blocked micro-kernel — AVX-512, AVX2/FMA or portable Go, chosen
// at run time — computes each tile of C. Large products are split across
// runtime.GOMAXPROCS goroutines. Products with at most a few rows (m ≤ 6,
// as in generation with a key-value cache) are computed a row at a time as
// vector-matrix products without packing, and tiny ones with a plain loop.
package gemm

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// active is the kernel Sgemm uses: the fastest one the CPU supports.
var active = kernels()[0]

// Sgemm computes C = alpha·op(A)·op(B) + beta·C for row-major float32
// matrices, with the semantics of gonum's blas.Float32 Sgemm: op(A) is m×k,
// op(B) is k×n and C is m×n; op(X) is Xᵀ when tX is true; lda, ldb and ldc
// are the row strides of A, B and C as stored. When beta is zero C is not
// read, and when alpha is zero A and B are not read. It panics on invalid
// dimensions or short slices, like gonum.
func Sgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	check(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if alpha == 0 || k == 0 {
		scale(m, n, beta, c, ldc)
		return
	}
	jb := job{tA: tA, tB: tB, m: m, n: n, k: k, alpha: alpha, beta: beta,
		a: a, b: b, c: c, lda: lda, ldb: ldb, ldc: ldc, kern: active}
	switch {
	case m*n*k <= smallWork:
		jb.small()
	case m <= gemvRows && jb.gemv():
	default:
		jb.parallel()
	}
}

// SgemmBias computes C = op(A)·op(B) + 1·biasᵀ: Sgemm with alpha 1 and
// beta 0, plus bias (n floats) added to every row of C, as a linear layer's
// forward pass needs. In the blocked path the bias is written into each
// tile of C just before its first kernel call, while the tile is in cache,
// instead of in a pass of its own over C.
func SgemmBias(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, bias []float32, c []float32, ldc int) {
	checkBias(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc, len(bias))
	if m == 0 || n == 0 {
		return
	}
	jb := job{tA: tA, tB: tB, m: m, n: n, k: k, alpha: 1, beta: 1,
		a: a, b: b, c: c, lda: lda, ldb: ldb, ldc: ldc, kern: active}
	if k == 0 || m*n*k <= smallWork || m <= gemvRows {
		biasRows(c, ldc, m, bias[:n])
		if k > 0 {
			Sgemm(tA, tB, m, n, k, 1, a, lda, b, ldb, 1, c, ldc)
		}
		return
	}
	jb.bias = bias[:n]
	jb.parallel()
}

// checkBias is check for the products with a bias (n floats at least).
func checkBias(tA, tB bool, m, n, k, la, lda, lb, ldb, lc, ldc, lbias int) {
	check(tA, tB, m, n, k, la, lda, lb, ldb, lc, ldc)
	if lbias < n {
		panic(fmt.Sprintf("gemm: bias has %d floats for %d columns", lbias, n))
	}
}

// biasRows copies bias into each of the m rows of C.
func biasRows(c []float32, ldc, m int, bias []float32) {
	for i := 0; i < m; i++ {
		copy(c[i*ldc:][:len(bias)], bias)
	}
}

// DenseStrides returns the row strides of A and B stored densely for the
// product of op(A), m×k, and op(B), k×n: lda is k, or m when A is stored
// transposed (k×m); ldb is n, or k when B is stored transposed (n×k).
func DenseStrides(tA, tB bool, m, n, k int) (lda, ldb int) {
	lda, ldb = k, n
	if tA {
		lda = m
	}
	if tB {
		ldb = k
	}
	return lda, ldb
}

// Dgemm is Sgemm for float64. Only tests use float64, so it is gonum's Dgemm.
func Dgemm(tA, tB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	gonum.Implementation{}.Dgemm(trans(tA), trans(tB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// scale sets C = beta·C, writing zeros without reading C when beta is zero.
func scale(m, n int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc:][:n]
		switch beta {
		case 0:
			clear(row)
		case 1:
		default:
			for j := range row {
				row[j] *= beta
			}
		}
	}
}

// check panics, as gonum does, when the dimensions or slices are invalid.
func check(tA, tB bool, m, n, k, la, lda, lb, ldb, lc, ldc int) {
	rowsA, colsA := m, k
	if tA {
		rowsA, colsA = k, m
	}
	rowsB, colsB := k, n
	if tB {
		rowsB, colsB = n, k
	}
	switch {
	case m < 0 || n < 0 || k < 0:
		panic(fmt.Sprintf("gemm: negative dimension m=%d n=%d k=%d", m, n, k))
	case lda < max(1, colsA):
		panic(fmt.Sprintf("gemm: bad lda %d for %d columns", lda, colsA))
	case ldb < max(1, colsB):
		panic(fmt.Sprintf("gemm: bad ldb %d for %d columns", ldb, colsB))
	case ldc < max(1, n):
		panic(fmt.Sprintf("gemm: bad ldc %d for %d columns", ldc, n))
	case m == 0 || n == 0:
		return
	case la < need(rowsA, colsA, lda):
		panic("gemm: short A")
	case lb < need(rowsB, colsB, ldb):
		panic("gemm: short B")
	case lc < need(m, n, ldc):
		panic("gemm: short C")
	}
}

// need is the length a rows×cols matrix with row stride ld occupies.
func need(rows, cols, ld int) int {
	if rows == 0 || cols == 0 {
		return 0
	}
	return (rows-1)*ld + cols
}

//go:build openblas

// Package cblas calls OpenBLAS's sgemm and dgemm through cgo, for the
// -tags openblas build. It is its own package because Go does not allow a
// package that uses cgo to hold Go assembly, and internal/ops has its SIMD
// kernels in assembly. Needs libopenblas-dev.
package cblas

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>
*/
import "C"

import "unsafe"

func init() { C.openblas_set_num_threads(1) }

func trans(t bool) C.enum_CBLAS_TRANSPOSE {
	if t {
		return C.CblasTrans
	}
	return C.CblasNoTrans
}

// Sgemm is row-major C = op(A)·op(B) + beta·C in float32, single-threaded.
func Sgemm(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	C.cblas_sgemm(C.CblasRowMajor, trans(tA), trans(tB), C.blasint(m), C.blasint(n), C.blasint(k), 1,
		(*C.float)(unsafe.Pointer(&a[0])), C.blasint(lda), (*C.float)(unsafe.Pointer(&b[0])), C.blasint(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.blasint(ldc))
}

// Dgemm is Sgemm in float64.
func Dgemm(tA, tB bool, m, n, k int, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	C.cblas_dgemm(C.CblasRowMajor, trans(tA), trans(tB), C.blasint(m), C.blasint(n), C.blasint(k), 1,
		(*C.double)(unsafe.Pointer(&a[0])), C.blasint(lda), (*C.double)(unsafe.Pointer(&b[0])), C.blasint(ldb),
		C.double(beta), (*C.double)(unsafe.Pointer(&c[0])), C.blasint(ldc))
}

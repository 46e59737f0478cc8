//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

//go:generate go run gen_kernels.go

// kernelAVX512 is the 12×32 AVX-512F kernel: 24 zmm accumulators.
//
//go:noescape
func kernelAVX512(k int, a, b, c *float32, ldc int, alpha, beta float32)

// kernelAVX2 is the 6×16 AVX2/FMA kernel: 12 ymm accumulators.
//
//go:noescape
func kernelAVX2(k int, a, b, c *float32, ldc int, alpha, beta float32)

// kernelAVX2Rows is kernelAVX2 reading A in place: 6 rows of a row-major
// matrix with row stride lda (kernel_rows_amd64.s).
//
//go:noescape
func kernelAVX2Rows(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32)

// kernelAVX2Cols is kernelAVX2Rows for a transposed A: element (i, p) at
// a[p*lda+i] (kernel_rows_amd64.s).
//
//go:noescape
func kernelAVX2Cols(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32)

var (
	avx512Kernel = &kernel{name: "avx512", mr: 12, nr: 32, fn: kernelAVX512}
	avx2Kernel   = &kernel{name: "avx2", mr: 6, nr: 16, fn: kernelAVX2, rows: kernelAVX2Rows, cols: kernelAVX2Cols}
)

// kernels lists the kernels this CPU can run, fastest first.
func kernels() []*kernel {
	var ks []*kernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, avx512Kernel)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2Kernel)
	}
	return append(ks, goKernel)
}

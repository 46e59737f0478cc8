//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

// gemvBF16AVX512 sets y[i] = Σ_{j<k} widen(w[i*k+j])·x'[j] for i < n, k a
// multiple of 64, with x' each 32 values of x as 16 even-indexed then 16
// odd-indexed (evenOdd): a 32-bit word of two bfloat16s widens to its low
// half shifted up 16 bits (the even weight) and its high half masked (the
// odd one), without a shuffle.
//
//go:noescape
func gemvBF16AVX512(k, n int, w *uint16, x, y *float32)

// gemvInt8AVX512 sets y[i] = Σ_b d[i*k/32+b]·Σ_{j in b} q[i*k+j]·x[j] for
// i < n, k a multiple of 64.
//
//go:noescape
func gemvInt8AVX512(k, n int, q *int8, d, x, y *float32)

// useReducedAsm selects the AVX-512 kernels; tests clear it to compare
// them with the Go loops.
var useReducedAsm = cpu.X86.HasAVX512F

// rowsAsm is rows on the AVX-512 kernels.
func (r *Reduced) rowsAsm(y, xp []float32, i0, i1 int) {
	k := r.stride
	switch r.Format {
	case BF16:
		w := r.bf[i0*k : i1*k]
		gemvBF16AVX512(k, i1-i0, &w[0], &xp[0], &y[i0:i1][0])
	case Int8:
		q, d := r.q[i0*k:i1*k], r.scales[i0*k/BlockSize:i1*k/BlockSize]
		gemvInt8AVX512(k, i1-i0, &q[0], &d[0], &xp[0], &y[i0:i1][0])
	}
}

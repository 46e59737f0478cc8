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

// gemvBF16AVX2 is gemvBF16AVX512 for AVX2 with FMA.
//
//go:noescape
func gemvBF16AVX2(k, n int, w *uint16, x, y *float32)

// gemvInt8AVX2 is gemvInt8AVX512 for AVX2 with FMA.
//
//go:noescape
func gemvInt8AVX2(k, n int, q *int8, d, x, y *float32)

// widenBF16AVX2 sets dst[j] to bfloat16 src[j] widened, for j < n, n a
// multiple of 16.
//
//go:noescape
func widenBF16AVX2(n int, src *uint16, dst *float32)

// widenInt8AVX2 sets dst[j] = d[j/32]·q[j] for j < 32·blocks.
//
//go:noescape
func widenInt8AVX2(blocks int, q *int8, d, dst *float32)

// widenAsm widens the first of row i of r's Cols into dst with the AVX2
// kernels and returns how many it did; Row does the rest.
func (r *Reduced) widenAsm(i int, dst []float32) int {
	if !useReducedAsm {
		return 0
	}
	switch r.Format {
	case BF16:
		n := r.Cols &^ 15
		if n > 0 {
			widenBF16AVX2(n, &r.bf[i*r.stride], &dst[0])
		}
		return n
	case Int8:
		b := r.Cols / BlockSize
		if b > 0 {
			widenInt8AVX2(b, &r.q[i*r.stride], &r.scales[i*r.stride/BlockSize], &dst[0])
		}
		return b * BlockSize
	}
	return 0
}

// hasReducedAVX2 says the AVX2 kernels can run.
var hasReducedAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// useReducedAsm selects the vector kernels, reducedAVX512 the AVX-512
// ones among them (else AVX2's); tests set them to compare each with the
// Go loops.
var (
	reducedAVX512 = cpu.X86.HasAVX512F
	useReducedAsm = reducedAVX512 || hasReducedAVX2
)

// rowsAsm is rows on the vector kernels.
func (r *Reduced) rowsAsm(y, xp []float32, i0, i1 int) {
	k := r.stride
	switch r.Format {
	case BF16:
		w := r.bf[i0*k : i1*k]
		if reducedAVX512 {
			gemvBF16AVX512(k, i1-i0, &w[0], &xp[0], &y[i0:i1][0])
		} else {
			gemvBF16AVX2(k, i1-i0, &w[0], &xp[0], &y[i0:i1][0])
		}
	case Int8:
		q, d := r.q[i0*k:i1*k], r.scales[i0*k/BlockSize:i1*k/BlockSize]
		if reducedAVX512 {
			gemvInt8AVX512(k, i1-i0, &q[0], &d[0], &xp[0], &y[i0:i1][0])
		} else {
			gemvInt8AVX2(k, i1-i0, &q[0], &d[0], &xp[0], &y[i0:i1][0])
		}
	}
}

// reducedKernels are the kernel choices this CPU can run, for tests and
// benchmarks: the Go loops, AVX2, AVX-512.
func reducedKernels() []string {
	ks := []string{"go"}
	if hasReducedAVX2 {
		ks = append(ks, "avx2")
	}
	if cpu.X86.HasAVX512F {
		ks = append(ks, "avx512")
	}
	return ks
}

// setReducedKernel selects kernel k of reducedKernels and returns a
// function that restores the choice.
func setReducedKernel(k string) (restore func()) {
	asm, w := useReducedAsm, reducedAVX512
	useReducedAsm, reducedAVX512 = k != "go", k == "avx512"
	return func() { useReducedAsm, reducedAVX512 = asm, w }
}

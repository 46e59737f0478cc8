package gemm

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// sgemmBF16TwoPass is SgemmBF16 the way it was before rounding moved into
// packing: each operand rounded into a whole word matrix first, which the
// float32 driver then packs as floats. The fused path must equal it bit
// for bit.
func sgemmBF16TwoPass(kern *kernel, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	kp := (k + 1) / 2
	bufs := getPairBuffers()
	defer putPairBuffers(bufs)
	// A word matrix of op(A) keeps A's orientation: untransposed, m rows
	// of kp words; transposed, kp rows of m words. Likewise op(B).
	var pa, pb []float32
	var lpa, lpb int
	if tA {
		pa, lpa = aligned(&bufs.a, kp*m), m
		pairMatrix(pa, a, lda, k, m)
	} else {
		pa, lpa = aligned(&bufs.a, m*kp), kp
		roundMatrix(pa, a, lda, m, k)
	}
	if tB {
		pb, lpb = aligned(&bufs.b, n*kp), kp
		roundMatrix(pb, b, ldb, n, k)
	} else {
		pb, lpb = aligned(&bufs.b, kp*n), n
		pairMatrix(pb, b, ldb, k, n)
	}
	jb := job{tA: tA, tB: tB, m: m, n: n, k: kp, alpha: alpha, beta: beta,
		a: pa, b: pb, c: c, lda: lpa, ldb: lpb, ldc: ldc, kern: kern}
	jb.parallel()
}

// pairBuffers holds the word matrices of one product.
type pairBuffers struct{ a, b []float32 }

var freePairs = make(chan *pairBuffers, 4)

func getPairBuffers() *pairBuffers {
	select {
	case b := <-freePairs:
		return b
	default:
		return new(pairBuffers)
	}
}

func putPairBuffers(b *pairBuffers) {
	select {
	case freePairs <- b:
	default:
	}
}

// roundWork is the floats from which the rounding is shared out among
// the cores (two at most: it is a pass over memory).
const roundWork = 1 << 16

// roundMatrix writes the word matrix of rows×k matrix src (row stride ld,
// k contiguous): dst row i, kp = ⌈k/2⌉ words, holds row i's pairs.
func roundMatrix(dst, src []float32, ld, rows, k int) {
	kp := (k + 1) / 2
	split(rows, rows*k, func(lo, hi int) {
		w := words(dst)
		for i := lo; i < hi; i++ {
			roundRow(w[i*kp:][:kp], src[i*ld:][:k])
		}
	})
}

// pairMatrix writes the word matrix of k×cols matrix src (row stride ld,
// k strided): dst row p, cols words, holds rows 2p and 2p+1 interleaved
// (row 2p+1 zero past an odd k).
func pairMatrix(dst, src []float32, ld, k, cols int) {
	kp := (k + 1) / 2
	split(kp, k*cols, func(lo, hi int) {
		w := words(dst)
		for p := lo; p < hi; p++ {
			r0 := src[2*p*ld:][:cols]
			var r1 []float32
			if 2*p+1 < k {
				r1 = src[(2*p+1)*ld:][:cols]
			}
			pairRows(w[p*cols:][:cols], r0, r1)
		}
	})
}

// split runs f over [0, n) on two goroutines when work is large enough.
func split(n, work int, f func(lo, hi int)) {
	if work < roundWork || n < 2 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f(n/2, n)
	}()
	f(0, n/2)
	wg.Wait()
}

// TestSgemmBF16FusedMatchesTwoPass checks that rounding inside packing
// gives the two-pass product's bits exactly: every transpose, odd k and
// edges (bf16Cases), blocked and shared-out sizes, alpha and beta, each
// bf16 kernel, with the assembly and the Go rounding; and SgemmBF16Bias
// against copying the bias into C and calling SgemmBF16 with beta 1.
func TestSgemmBF16FusedMatchesTwoPass(t *testing.T) {
	cases := bf16Cases()
	if !testing.Short() {
		cases = append(cases,
			gemmCase{m: 1100, n: 530, k: 520, alpha: 1},
			gemmCase{tA: true, m: 300, n: 1030, k: 1025, alpha: 1, beta: 1},
			gemmCase{tB: true, m: 257, n: 600, k: 301, alpha: 1, pad: 3},
			gemmCase{tA: true, tB: true, m: 130, n: 129, k: 700, alpha: 2},
			gemmCase{tA: true, tB: false, m: 64, n: 1100, k: 515, alpha: 1, pad: 1},
		)
	}
	asms := []bool{false}
	if useBF16Asm {
		asms = append(asms, true)
	}
	for _, asm := range asms {
		for _, kern := range bf16Kernels() {
			name := kern.name
			if !asm {
				name += "/go-rounding"
			}
			t.Run(name, func(t *testing.T) {
				defer func(v bool) { useBF16Asm = v }(useBF16Asm)
				useBF16Asm = asm
				rng := rand.New(rand.NewPCG(11, 12))
				for _, tc := range cases {
					if kern == bf16GoKernel && tc.m*tc.n*tc.k > 1<<20 {
						continue // the Go kernel is slow; the small cases cover it
					}
					t.Run(tc.String(), func(t *testing.T) { tc.checkFused(t, rng, kern) })
				}
			})
		}
	}
}

// checkFused runs tc through sgemmBF16 and sgemmBF16TwoPass on the same
// operands (with NaN, infinities, subnormals and ties sprinkled in) and
// compares the bits; and, with beta 1 and alpha 1, SgemmBF16Bias's path
// against a bias copied in.
func (tc gemmCase) checkFused(t *testing.T, rng *rand.Rand, kern *kernel) {
	t.Helper()
	ra, ca := tc.m, tc.k
	if tc.tA {
		ra, ca = tc.k, tc.m
	}
	rb, cb := tc.k, tc.n
	if tc.tB {
		rb, cb = tc.n, tc.k
	}
	lda, ldb, ldc := ca+tc.pad, cb+tc.pad, tc.n+tc.pad
	fill := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64())
			switch rng.IntN(200) {
			case 0:
				s[i] = float32(math.Inf(1))
			case 1:
				s[i] = 1e-40 // subnormal: rounds to zero
			case 2:
				s[i] = math.Float32frombits(0x3f808000) // a tie
			case 3:
				s[i] = math.Float32frombits(0x3f818000) // the other tie
			}
		}
		return s
	}
	a, b := fill(ra*lda), fill(rb*ldb)
	c0 := fill(tc.m * ldc)
	got := append([]float32(nil), c0...)
	want := append([]float32(nil), c0...)
	sgemmBF16(kern, tc.tA, tc.tB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, got, ldc)
	sgemmBF16TwoPass(kern, tc.tA, tc.tB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, want, ldc)
	sameBits(t, "fused", got, want)

	bias := fill(tc.n)
	copy(got, c0)
	copy(want, c0)
	jb := bf16Job(kern, tc.tA, tc.tB, tc.m, tc.n, tc.k, 1, a, lda, b, ldb, 1, got, ldc)
	jb.bias = bias
	jb.parallel()
	for i := 0; i < tc.m; i++ {
		copy(want[i*ldc:][:tc.n], bias)
	}
	sgemmBF16TwoPass(kern, tc.tA, tc.tB, tc.m, tc.n, tc.k, 1, a, lda, b, ldb, 1, want, ldc)
	sameBits(t, "bias", got, want)
}

// sameBits fails t at the first word where got and want differ in bits.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: C[%d] = %g (%#08x), two-pass %g (%#08x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestSgemmBF16Bias checks the exported entry point against SgemmBF16
// with the bias copied in, and its refusal of a short bias.
func TestSgemmBF16Bias(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, s := range [][3]int{{1, 1, 1}, {3, 5, 0}, {37, 70, 65}, {300, 200, 128}} {
		m, n, k := s[0], s[1], s[2]
		x, w, bias := make([]float32, m*k), make([]float32, n*k), make([]float32, n)
		for _, v := range [][]float32{x, w, bias} {
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
		}
		got, want := make([]float32, m*n), make([]float32, m*n)
		SgemmBF16Bias(false, true, m, n, k, x, max(k, 1), w, max(k, 1), bias, got, n)
		for i := 0; i < m; i++ {
			copy(want[i*n:][:n], bias)
		}
		SgemmBF16(false, true, m, n, k, 1, x, max(k, 1), w, max(k, 1), 1, want, n)
		sameBits(t, "SgemmBF16Bias", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a bias shorter than n did not panic")
		}
	}()
	SgemmBF16Bias(false, true, 2, 3, 4, make([]float32, 8), 4, make([]float32, 12), 4, make([]float32, 2), make([]float32, 6), 3)
}

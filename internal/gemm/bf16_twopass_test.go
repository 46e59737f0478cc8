package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
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

// TestSgemmBF16FusedMatchesTwoPass checks that rounding inside packing
// gives the two-pass product's bits exactly: every transpose, odd k and
// edges (bf16Cases), blocked and shared-out sizes, alpha and beta, each
// bf16 kernel, with the assembly and the Go rounding, op(B) rounded while
// packed and beforehand (preRoundB); and SgemmBF16Bias's path against
// copying the bias into C and calling the two-pass product with beta 1.
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
			for _, pre := range []int{0, 1} { // B rounded while packed; B rounded beforehand
				name := fmt.Sprintf("%s/preRoundB%d", kern.name, pre)
				if !asm {
					name += "/go-rounding"
				}
				t.Run(name, func(t *testing.T) {
					defer func(v bool, p int) { useBF16Asm, preRoundB = v, p }(useBF16Asm, preRoundB)
					useBF16Asm, preRoundB = asm, pre
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

// BenchmarkBF16FusedVsTwoPass times SgemmBF16's product against
// rounding every operand inside packing (fused-only: preRoundB 0) and
// against the two-pass way, on BenchmarkSgemmBF16's shapes, interleaved
// call by call so that a shared machine's load falls on all alike: least
// ms per call of each, and the medians of the paired speed-ups over the
// two-pass way.
//
//	go test ./internal/gemm -run '^$' -bench BF16FusedVsTwoPass -benchtime 20x
func BenchmarkBF16FusedVsTwoPass(b *testing.B) {
	type shape struct {
		m, k, n, batch int
		tts            []string
	}
	all := []string{"NT", "NN", "TN"}
	for _, s := range []shape{
		{4096, 256, 1024, 1, all}, {4096, 1024, 256, 1, all}, {4096, 256, 768, 1, all},
		{4096, 256, 512, 1, all}, {6400, 128, 384, 1, all}, {6400, 512, 128, 1, all},
		{128, 64, 128, 64, []string{"NT", "TN"}}, {128, 128, 64, 64, []string{"NN", "TN"}},
		{50, 32, 50, 256, []string{"NT", "TN"}}, {50, 50, 32, 256, []string{"NN", "TN"}},
	} {
		for _, tt := range s.tts {
			tA, tB := tt[0] == 'T', tt[1] == 'T'
			lda, ldb := DenseStrides(tA, tB, s.m, s.n, s.k)
			a := randSlice(s.batch * s.m * s.k)
			bb := randSlice(s.batch * s.k * s.n)
			c := make([]float32, s.batch*s.m*s.n)
			mk, kn, mn := s.m*s.k, s.k*s.n, s.m*s.n
			run := func(f func(*kernel, bool, bool, int, int, int, float32, []float32, int, []float32, int, float32, []float32, int)) time.Duration {
				t0 := time.Now()
				for i := 0; i < s.batch; i++ {
					f(activeBF16, tA, tB, s.m, s.n, s.k, 1, a[i*mk:(i+1)*mk], lda, bb[i*kn:(i+1)*kn], ldb, 0, c[i*mn:(i+1)*mn], s.n)
				}
				return time.Since(t0)
			}
			fusedOnly := func(kern *kernel, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
				defer func(v int) { preRoundB = v }(preRoundB)
				preRoundB = 0
				sgemmBF16(kern, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
			}
			ways := []func(*kernel, bool, bool, int, int, int, float32, []float32, int, []float32, int, float32, []float32, int){
				sgemmBF16, fusedOnly, sgemmBF16TwoPass}
			b.Run(fmt.Sprintf("%dx%dx%dx%d/%s", s.m, s.k, s.n, s.batch, tt), func(b *testing.B) {
				for _, f := range ways {
					run(f)
				}
				mins := []time.Duration{1 << 62, 1 << 62, 1 << 62}
				var ratios [2][]float64
				for i := 0; i < b.N; i++ {
					var d [3]time.Duration
					for j := range ways {
						w := (i + j) % len(ways) // rotate the order
						d[w] = run(ways[w])
					}
					for w := range d {
						mins[w] = min(mins[w], d[w])
					}
					ratios[0] = append(ratios[0], float64(d[2])/float64(d[0]))
					ratios[1] = append(ratios[1], float64(d[2])/float64(d[1]))
				}
				for i := range ratios {
					slices.Sort(ratios[i])
				}
				b.ReportMetric(float64(mins[0].Microseconds())/1e3, "min-ms")
				b.ReportMetric(float64(mins[1].Microseconds())/1e3, "min-ms-fused-only")
				b.ReportMetric(float64(mins[2].Microseconds())/1e3, "min-ms-twopass")
				b.ReportMetric(ratios[0][len(ratios[0])/2], "median-speedup")
				b.ReportMetric(ratios[1][len(ratios[1])/2], "median-speedup-fused-only")
			})
		}
	}
}

package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// bf16Ref is the float64 product of op(A) and op(B) rounded to bfloat16,
// with alpha and beta, and the bound on a float32 sum's error for each
// element: (k+2)·2⁻²⁴·(|alpha|·Σ|a||b| + |beta·c|), the products being
// exact.
func bf16Ref(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (want, tol []float64) {
	want, tol = make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, sa float64
			for p := 0; p < k; p++ {
				ia, ib := i*lda+p, p*ldb+j
				if tA {
					ia = p*lda + i
				}
				if tB {
					ib = j*ldb + p
				}
				av, bv := a[ia], b[ib]
				x := float64(RoundBF16(av)) * float64(RoundBF16(bv))
				s += x
				sa += math.Abs(x)
			}
			w := float64(alpha) * s
			e := math.Abs(float64(alpha)) * sa
			if beta != 0 {
				w += float64(beta) * float64(c[i*ldc+j])
				e += math.Abs(float64(beta) * float64(c[i*ldc+j]))
			}
			want[i*n+j] = w
			tol[i*n+j] = float64(k+4)*0x1p-24*e + 1e-30
		}
	}
	return want, tol
}

// checkBF16 runs one product through kern and compares it with bf16Ref.
func (tc gemmCase) checkBF16(t *testing.T, rng *rand.Rand, kern *kernel) {
	t.Helper()
	ra, ca := tc.m, tc.k
	if tc.tA {
		ra, ca = ca, ra
	}
	rb, cb := tc.k, tc.n
	if tc.tB {
		rb, cb = cb, rb
	}
	a, lda := randMat(rng, ra, ca, tc.pad)
	b, ldb := randMat(rng, rb, cb, tc.pad)
	c0, ldc := randMat(rng, tc.m, tc.n, tc.pad)
	for i := range c0 {
		if i%ldc >= tc.n {
			c0[i] = sentinel
		}
	}
	want, tol := bf16Ref(tc.tA, tc.tB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c0, ldc)
	got := append([]float32(nil), c0...)
	if tc.beta == 0 {
		for i := range got {
			if i%ldc < tc.n {
				got[i] = float32(math.NaN()) // beta = 0 must not read C
			}
		}
	}
	if kern == nil {
		SgemmBF16(tc.tA, tc.tB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, got, ldc)
	} else {
		sgemmBF16(kern, tc.tA, tc.tB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, got, ldc)
	}
	bad := 0
	for i := 0; i < tc.m; i++ {
		for j := 0; j < ldc && i*ldc+j < len(got); j++ {
			g := got[i*ldc+j]
			if j >= tc.n {
				if g != sentinel {
					t.Fatalf("C[%d][%d] (padding) = %g, was %d", i, j, g, sentinel)
				}
				continue
			}
			w, e := want[i*tc.n+j], tol[i*tc.n+j]
			if d := math.Abs(float64(g) - w); !(d <= e) {
				if bad++; bad <= 3 {
					t.Errorf("C[%d][%d] = %.9g, want %.9g ± %.3g (off by %.3g)", i, j, g, w, e, d)
				}
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d elements off", bad, tc.m*tc.n)
	}
}

// bf16Cases are odd sizes and edges, every transpose, several k (odd, one
// below and above the blocking's 2·blockK), alpha and beta.
func bf16Cases() []gemmCase {
	var cs []gemmCase
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			for _, s := range [][3]int{
				{1, 1, 1}, {1, 7, 3}, {5, 1, 2}, {3, 5, 7}, {12, 32, 16}, {13, 33, 17},
				{25, 65, 31}, {37, 19, 64}, {11, 45, 511}, {29, 70, 513}, {100, 97, 130},
			} {
				cs = append(cs, gemmCase{tA: tA, tB: tB, m: s[0], n: s[1], k: s[2], alpha: 1, beta: 0, pad: s[2] % 3})
			}
			cs = append(cs,
				gemmCase{tA: tA, tB: tB, m: 31, n: 47, k: 33, alpha: 1, beta: 1, pad: 2},
				gemmCase{tA: tA, tB: tB, m: 26, n: 40, k: 48, alpha: -0.5, beta: 0.25},
			)
		}
	}
	return cs
}

// TestSgemmBF16 checks SgemmBF16 and each bf16 kernel this CPU can run
// (the AVX-512 BF16 one and the Go one, with the assembly rounding and
// with the Go rounding) against a float64 product of the bf16-rounded
// operands, within float32 summation error.
func TestSgemmBF16(t *testing.T) {
	type way struct {
		name string
		kern *kernel
		asm  bool
	}
	ways := []way{{"SgemmBF16", nil, useBF16Asm}}
	for _, k := range bf16Kernels() {
		ways = append(ways, way{k.name, k, useBF16Asm})
		if useBF16Asm {
			ways = append(ways, way{k.name + "/go-rounding", k, false})
		}
	}
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			defer func(v bool) { useBF16Asm = v }(useBF16Asm)
			useBF16Asm = w.asm
			rng := rand.New(rand.NewPCG(7, 8))
			for _, tc := range bf16Cases() {
				t.Run(tc.String(), func(t *testing.T) { tc.checkBF16(t, rng, w.kern) })
			}
		})
	}
}

// TestSgemmBF16Large runs products big enough to be blocked (k past
// 2·blockK, m past blockM) and shared among goroutines.
func TestSgemmBF16Large(t *testing.T) {
	if testing.Short() {
		t.Skip("large products")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []gemmCase{
		{m: 1100, n: 530, k: 520, alpha: 1},
		{tA: true, m: 300, n: 1030, k: 1025, alpha: 1, beta: 1},
		{tB: true, m: 257, n: 600, k: 300, alpha: 1},
		{tA: true, tB: true, m: 130, n: 129, k: 700, alpha: 2},
	} {
		t.Run(tc.String(), func(t *testing.T) { tc.checkBF16(t, rng, nil) })
	}
}

// TestSgemmBF16NotFloat32 checks that the operands are rounded: a product
// whose float32 and bf16 results differ by far more than float32 error.
func TestSgemmBF16NotFloat32(t *testing.T) {
	x := float32(1 + 0x1p-9) // rounds to 1 (a tie, to even); 1+3·2⁻⁹ rounds up to 1+2⁻⁷
	a := []float32{x, 1 + 3*0x1p-9}
	b := []float32{1, 1}
	for _, kern := range bf16Kernels() {
		c := []float32{0}
		sgemmBF16(kern, false, false, 1, 1, 2, 1, a, 2, b, 1, 0, c, 1)
		if want := float32(1 + 1 + 0x1p-7); c[0] != want {
			t.Errorf("%s: bf16 [%v %v]·[1 1] = %v, want %v", kern.name, a[0], a[1], c[0], want)
		}
	}
}

// TestRoundBF16 checks roundBF16 against round-to-nearest-even computed in
// float64, and the special values.
func TestRoundBF16(t *testing.T) {
	for _, tc := range []struct {
		in   float32
		want uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3f80}, {-2, 0xc000},
		{1 + 0x1p-8, 0x3f80},               // a tie: to even (down)
		{1 + 3*0x1p-8, 0x3f82},             // a tie: to even (up)
		{1 + 0x1p-8 + 0x1p-20, 0x3f81},     // above the tie
		{0x1p-127, 0}, {-0x1p-130, 0x8000}, // subnormals flush to zero
		{math.MaxFloat32, 0x7f80}, // rounds up to +Inf
		{float32(math.Inf(-1)), 0xff80},
	} {
		if got := roundBF16(tc.in); got != tc.want {
			t.Errorf("roundBF16(%g) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
	if got := roundBF16(float32(math.NaN())); got&0x7f80 != 0x7f80 || got&0x7f == 0 && got&0x40 == 0 {
		t.Errorf("roundBF16(NaN) = %#04x, want a NaN", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		f := math.Float32frombits(rng.Uint32())
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) || math.Abs(float64(f)) < 0x1p-126 || math.Abs(float64(f)) > 0x1p127 {
			continue
		}
		// Nearest of the two bf16 neighbours, ties to even, in float64.
		lo := math.Float32frombits(math.Float32bits(f) &^ 0xffff)
		hi := math.Float32frombits(math.Float32bits(lo) + 0x10000)
		dl, dh := math.Abs(float64(f)-float64(lo)), math.Abs(float64(hi)-float64(f))
		want := lo
		if dh < dl || dh == dl && (math.Float32bits(lo)>>16)&1 == 1 {
			want = hi
		}
		if got := RoundBF16(f); got != want {
			t.Fatalf("RoundBF16(%g) = %g, want %g", f, got, want)
		}
	}
}

// TestBF16AsmMatchesGo checks the assembly rounding routines bit for bit
// against the Go ones, special values included.
func TestBF16AsmMatchesGo(t *testing.T) {
	if !useBF16Asm {
		t.Skip("no AVX-512 BF16")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	special := []float32{0, float32(math.Copysign(0, -1)), 0x1p-130, -0x1p-140, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, 1 + 0x1p-8, 1 + 3*0x1p-8}
	for _, n := range []int{1, 15, 16, 31, 32, 33, 64, 100, 161} {
		src := make([]float32, 2*n)
		for i := range src {
			src[i] = math.Float32frombits(rng.Uint32())
			if i < len(special) && n > 30 {
				src[i] = special[i]
			}
		}
		r0, r1 := src[:n], src[n:]
		got, want := make([]uint32, n), make([]uint32, n)
		pairRows(got, r0, r1)
		pairRowsGo(want, r0, r1)
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("pairRows n=%d: word %d = %#08x, Go %#08x (from %g, %g)", n, j, got[j], want[j], r0[j], r1[j])
			}
		}
		pairRows(got, r0, nil) // an odd k's last row: zeros above
		pairRowsGo(want, r0, nil)
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("pairRows n=%d, no r1: word %d = %#08x, Go %#08x", n, j, got[j], want[j])
			}
		}
		kp := (n + 1) / 2
		got, want = got[:kp], make([]uint32, kp)
		roundRow(got, r0)
		roundRowGo(want, r0)
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("roundRow n=%d: word %d = %#08x, Go %#08x", n, j, got[j], want[j])
			}
		}
	}
}

// TestSgemmBF16Panics checks that SgemmBF16 checks its arguments as Sgemm.
func TestSgemmBF16Panics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic on a short A")
		}
	}()
	SgemmBF16(false, false, 2, 2, 2, 1, make([]float32, 3), 2, make([]float32, 4), 2, 0, make([]float32, 4), 2)
}

func ExampleSgemmBF16() {
	a := []float32{1, 1 + 0x1p-10} // 1×2; the second rounds to 1 in bfloat16
	b := []float32{3, 4}           // 2×1
	bf, f32 := make([]float32, 1), make([]float32, 1)
	SgemmBF16(false, false, 1, 1, 2, 1, a, 2, b, 1, 0, bf, 1)
	Sgemm(false, false, 1, 1, 2, 1, a, 2, b, 1, 0, f32, 1)
	fmt.Println(bf[0], f32[0], RoundBF16(1+0x1p-10))
	// Output: 7 7.0039062 1
}

func ExampleSgemmBF16Bias() {
	x := []float32{1, 1 + 0x1p-10, 2, 0} // 2×2 inputs; 1+2⁻¹⁰ rounds to 1
	w := []float32{3, 4, 1, -1}          // 2×2 weights, one output per row
	bias := []float32{0.5, -0.5}
	y := make([]float32, 4)
	SgemmBF16Bias(false, true, 2, 2, 2, x, 2, w, 2, bias, y, 2) // y = x·wᵀ + bias
	fmt.Println(y)
	// Output: [7.5 -0.5 6.5 1.5]
}

// TestSgemmBF16Concurrent runs products on several goroutines at once
// (they share the pool of packing buffers): each
// result equals the same product run alone, bit for bit.
func TestSgemmBF16Concurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const m, n, k = 70, 90, 150
	a, _ := randMat(rng, m, k, 0)
	b, _ := randMat(rng, n, k, 0)
	want := make([]float32, m*n)
	SgemmBF16(false, true, m, n, k, 1, a, k, b, k, 0, want, n)
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			c := make([]float32, m*n)
			for range 20 {
				SgemmBF16(false, true, m, n, k, 1, a, k, b, k, 0, c, n)
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
						errs <- fmt.Errorf("goroutine %d: C[%d] = %g, alone %g", g, i, c[i], want[i])
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

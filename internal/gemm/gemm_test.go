package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/blas/gonum"
)

// sentinel fills the padding of C (columns n..ldc-1); it must survive.
const sentinel = 12345

// gemmCase is one product to check.
type gemmCase struct {
	tA, tB      bool
	m, n, k     int
	alpha, beta float32
	pad         int // extra row-stride elements in A, B and C
}

func (tc gemmCase) String() string {
	return fmt.Sprintf("%s%s/m%d_n%d_k%d/alpha%g_beta%g_pad%d", tr(tc.tA), tr(tc.tB), tc.m, tc.n, tc.k, tc.alpha, tc.beta, tc.pad)
}

func tr(t bool) string {
	if t {
		return "T"
	}
	return "N"
}

// randMat returns a rows×cols matrix with row stride cols+pad, values in [-1, 1).
func randMat(rng *rand.Rand, rows, cols, pad int) ([]float32, int) {
	ld := max(1, cols+pad)
	s := make([]float32, max(0, (rows-1)*ld+cols))
	for i := range s {
		s[i] = 2*rng.Float32() - 1
	}
	return s, ld
}

// check runs Sgemm on tc and compares it with gonum's Sgemm.
func (tc gemmCase) check(t *testing.T, rng *rand.Rand) {
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
	if tc.alpha == 0 { // alpha = 0 must not read A or B
		for _, s := range [][]float32{a, b} {
			for i := range s {
				s[i] = float32(math.NaN())
			}
		}
	}
	for i := range c0 {
		if i%ldc >= tc.n {
			c0[i] = sentinel
		} else if tc.beta == 0 {
			c0[i] = float32(math.NaN()) // beta = 0 must not read C
		}
	}
	got := append([]float32(nil), c0...)
	Sgemm(tc.tA, tc.tB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, got, ldc)
	want := append([]float32(nil), c0...)
	if tc.beta == 0 {
		for i := range want {
			if i%ldc < tc.n {
				want[i] = 0 // C holds NaNs; the result must not
			}
		}
	}
	if tc.alpha == 0 { // reference BLAS: C = beta·C; gonum would read A and B
		for i := range want {
			if i%ldc < tc.n {
				want[i] *= tc.beta
			}
		}
	} else {
		gonum.Implementation{}.Sgemm(trans(tc.tA), trans(tc.tB), tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, want, ldc)
	}

	// |alpha|·|op(A)|·|op(B)| bounds the rounding error of each dot product.
	absA, absB := abs(a), abs(b)
	bound := make([]float64, len(c0))
	if tc.m > 0 && tc.n > 0 && tc.alpha != 0 {
		gonum.Implementation{}.Dgemm(trans(tc.tA), trans(tc.tB), tc.m, tc.n, tc.k, math.Abs(float64(tc.alpha)), absA, lda, absB, ldb, 0, bound, ldc)
	}
	const eps = 1.0 / (1 << 23)
	bad := 0
	for i := range got {
		if i%ldc >= tc.n {
			if got[i] != sentinel {
				t.Fatalf("%v: padding C[%d] changed to %g", tc, i, got[i])
			}
			continue
		}
		tol := 2 * float64(tc.k+2) * eps * (bound[i] + math.Abs(float64(tc.beta*c0[i])))
		if tc.beta == 0 {
			tol = 2 * float64(tc.k+2) * eps * bound[i]
		}
		if d := math.Abs(float64(got[i] - want[i])); !(d <= tol+1e-30) {
			if bad++; bad <= 3 {
				t.Errorf("%v: C[%d,%d] = %g, want %g (tol %g)", tc, i/ldc, i%ldc, got[i], want[i], tol)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%v: %d wrong elements", tc, bad)
	}
}

func abs(s []float32) []float64 {
	d := make([]float64, len(s))
	for i, v := range s {
		d[i] = math.Abs(float64(v))
	}
	return d
}

// sweep checks all transposes over odd sizes, zero and one dimensions,
// padded strides and the alpha, beta combinations.
func sweep(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{0, 1, 3, 7, 17, 63, 65, 129}
	alphas := []float32{1, 0.5, 0}
	betas := []float32{0, 1, -0.7}
	i := 0
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			for _, m := range sizes {
				for _, n := range sizes {
					for _, k := range sizes {
						i++
						tc := gemmCase{tA: tA, tB: tB, m: m, n: n, k: k,
							alpha: alphas[i%3], beta: betas[(i/3)%3], pad: []int{0, 3}[(i/9)%2]}
						tc.check(t, rng)
					}
				}
			}
		}
	}
	// Every alpha, beta pair on one shape with a tile edge in each dimension.
	for _, alpha := range alphas {
		for _, beta := range betas {
			for _, tA := range []bool{false, true} {
				for _, tB := range []bool{false, true} {
					gemmCase{tA: tA, tB: tB, m: 37, n: 41, k: 29, alpha: alpha, beta: beta, pad: 5}.check(t, rng)
				}
			}
		}
	}
}

// withKernel runs f with kern forced as the active kernel.
func withKernel(t *testing.T, kern *kernel, f func(t *testing.T)) {
	t.Run(kern.name, func(t *testing.T) {
		saved := active
		active = kern
		defer func() { active = saved }()
		f(t)
	})
}

// TestSgemmKernels runs the sweep with every kernel this CPU supports: on an
// AVX-512 machine that is the AVX-512, AVX2 and portable Go kernels.
func TestSgemmKernels(t *testing.T) {
	for _, kern := range kernels() {
		withKernel(t, kern, sweep)
	}
}

// TestSgemmGoPacking runs the sweep with the portable packing routines (and
// without the few-rows vector path, so that few-row products are packed
// too).
func TestSgemmGoPacking(t *testing.T) {
	if !asmPack && !asmTrans16AVX2 && !asmGemvAVX2 {
		t.Skip("the Go packing routines are the only ones here")
	}
	savedPack, savedTrans, savedGemv := asmPack, asmTrans16AVX2, asmGemvAVX2
	asmPack, asmTrans16AVX2, asmGemvAVX2 = false, false, false
	defer func() { asmPack, asmTrans16AVX2, asmGemvAVX2 = savedPack, savedTrans, savedGemv }()
	for _, kern := range kernels() {
		withKernel(t, kern, sweep)
	}
}

// TestSgemmPackedA runs the sweep and the blocked shapes with A always
// packed: with useRows set (the default), kernels with a rows variant read
// an untransposed A in place, and the packed path is then only taken for
// the partial last micro-panel of each block.
func TestSgemmPackedA(t *testing.T) {
	useRows = false
	defer func() { useRows = true }()
	for _, kern := range kernels() {
		withKernel(t, kern, sweep)
	}
}

// TestSgemmFewRows checks products with m ≤ gemvRows, which are computed a
// row at a time, with tails in n (n % 16, n % 128, n % 8, n % 64) and k
// (k % 16, k % 8): with the AVX-512 routines where there are some, and
// with the AVX2 ones.
func TestSgemmFewRows(t *testing.T) {
	fewRows(t)
	if asmPack && asmGemvAVX2 {
		asmPack = false
		defer func() { asmPack = true }()
		t.Run("avx2", fewRows)
	}
}

func fewRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for m := 1; m <= gemvRows+1; m++ {
		for _, nk := range [][2]int{{300, 37}, {128, 16}, {1, 300}, {143, 129}, {5, 3}, {72, 24}, {519, 8}, {8, 520}} {
			for _, tA := range []bool{false, true} {
				for _, tB := range []bool{false, true} {
					gemmCase{tA: tA, tB: tB, m: m, n: nk[0], k: nk[1], alpha: 1, beta: 0}.check(t, rng)
					gemmCase{tA: tA, tB: tB, m: m, n: nk[0], k: nk[1], alpha: 0.5, beta: -0.7, pad: 3}.check(t, rng)
				}
			}
		}
	}
}

// TestSgemmBlocking shrinks the blocking parameters so that odd shapes cross
// several kc, mc and nc blocks, and forces the multi-goroutine split.
func TestSgemmBlocking(t *testing.T) {
	saved := [...]int{blockK, blockM, blockN, parallelWork}
	defer func() { blockK, blockM, blockN, parallelWork = saved[0], saved[1], saved[2], saved[3] }()
	blockK, blockM, blockN, parallelWork = 16, 1, 1, 1 // mc, nc round up to one tile
	rng := rand.New(rand.NewPCG(3, 4))
	for _, kern := range kernels() {
		withKernel(t, kern, func(t *testing.T) {
			for _, s := range [][3]int{{1, 1, 1}, {13, 33, 17}, {100, 35, 33}, {25, 130, 64}, {63, 65, 129}} {
				for _, tA := range []bool{false, true} {
					for _, tB := range []bool{false, true} {
						gemmCase{tA: tA, tB: tB, m: s[0], n: s[1], k: s[2], alpha: 0.5, beta: -0.7, pad: 2}.check(t, rng)
						gemmCase{tA: tA, tB: tB, m: s[0], n: s[1], k: s[2], alpha: 1, beta: 0, pad: 0}.check(t, rng)
					}
				}
			}
		})
	}
}

// TestSgemmSmall checks the unpacked path used for tiny products.
func TestSgemmSmall(t *testing.T) {
	saved := smallWork
	defer func() { smallWork = saved }()
	smallWork = 1 << 30
	t.Run("unpacked", sweep)
}

// TestSgemmLarge checks model-sized products with the default blocking.
func TestSgemmLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large products")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range [][3]int{{2048, 256, 768}, {1024, 1024, 256}, {333, 517, 1031}} {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				gemmCase{tA: tA, tB: tB, m: s[0], n: s[1], k: s[2], alpha: 1, beta: 0.5}.check(t, rng)
			}
		}
	}
}

// TestSgemmSplit checks that large products are shared among goroutines and
// small ones are not.
func TestSgemmSplit(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS ≥ 2")
	}
	big := job{m: 2048, n: 768, k: 256, kern: active}
	if r, c := big.split(); r*c < 2 {
		t.Errorf("2048×256×768 uses %d×%d goroutines, want ≥ 2", r, c)
	}
	tall := job{m: 4, n: 8192, k: 1024, kern: active}
	if r, c := tall.split(); r*c < 2 || r != 1 {
		t.Errorf("4×1024×8192 uses %d×%d goroutines, want ≥ 2 by columns", r, c)
	}
	head := job{m: 128, n: 128, k: 64, kern: active}
	if r, c := head.split(); r*c != 1 {
		t.Errorf("128×64×128 uses %d×%d goroutines, want 1", r, c)
	}
}

// TestSgemmGrid checks the grid split on many cores: GOMAXPROCS 16 (on any
// machine) shares the products of a GPT and a ViT step, their weight
// gradients' few rows of tiles included, on grids of rows and columns,
// and the results match the float64 products, with a bias and in bf16
// too.
func TestSgemmGrid(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	grids := map[[2]int]bool{}
	for _, s := range [][3]int{{256, 256, 2048}, {128, 128, 6400}, {2048, 1024, 256}, {6400, 128, 128}, {64, 4000, 256}, {130, 70, 3000}} {
		r, c := (&job{m: s[0], n: s[1], k: s[2], kern: active}).split()
		if r*c > 16 {
			t.Fatalf("%v: %d×%d goroutines on GOMAXPROCS 16", s, r, c)
		}
		grids[[2]int{min(r, 2), min(c, 2)}] = true
	}
	if !grids[[2]int{2, 2}] {
		t.Errorf("no product was shared on a grid of ≥ 2 rows and ≥ 2 columns: %v", grids)
	}
	if r, c := (&job{m: 256, n: 256, k: 2048, kern: active}).split(); r*c < 12 {
		t.Errorf("256×2048×256 on GOMAXPROCS 16: %d×%d goroutines, want ≥ 12", r, c)
	}
	saved := parallelWork
	defer func() { parallelWork = saved }()
	parallelWork = 1 << 12 // small products on grids too, to test edges cheaply
	rng := rand.New(rand.NewPCG(7, 8))
	for _, kern := range kernels() {
		withKernel(t, kern, func(t *testing.T) {
			for _, s := range [][3]int{{256, 256, 70}, {37, 200, 41}, {200, 37, 41}, {130, 70, 33}} {
				for _, tA := range []bool{false, true} {
					for _, tB := range []bool{false, true} {
						gemmCase{tA: tA, tB: tB, m: s[0], n: s[1], k: s[2], alpha: 0.5, beta: -0.7, pad: 2}.check(t, rng)
					}
				}
			}
		})
	}
	t.Run("bias", TestSgemmBias)
	t.Run("bf16", TestSgemmBF16)
	t.Run("bf16-bias", TestSgemmBF16Bias)
	parallelWork = saved
	t.Run("bits", testGridBits)
}

// testGridBits checks that a grid split does not change a bit of the
// result: without ranges of k, every element of C is summed in the order
// one goroutine sums it, whatever the grid (rows, columns or both).
func testGridBits(t *testing.T) {
	savedMin := splitMinWorkers
	defer func() { splitMinWorkers = savedMin }()
	splitMinWorkers = 1 << 30
	for _, s := range [][3]int{{256, 256, 2048}, {128, 128, 6400}, {2048, 768, 256}, {600, 330, 300}} {
		m, n, k := s[0], s[1], s[2]
		a, b, c := randSlice(m*k), randSlice(k*n), make([]float32, m*n)
		grids := map[[2]int]bool{}
		var want []float32
		for _, procs := range []int{1, 2, 3, 5, 8, 16} {
			runtime.GOMAXPROCS(procs)
			r, cc := (&job{m: m, n: n, k: k, kern: active}).split()
			grids[[2]int{r, cc}] = true
			Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
			if procs == 1 {
				want = append(want[:0], c...)
				continue
			}
			for i := range c {
				if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v on GOMAXPROCS %d (grid %d×%d): C[%d] = %v, one goroutine gives %v", s, procs, r, cc, i, c[i], want[i])
				}
			}
		}
		if len(grids) < 3 {
			t.Errorf("%v: the thread counts gave only the grids %v", s, grids)
		}
	}
}

// TestSgemmSplitK checks the products shared out by ranges of k: the cost
// model picks them for the weight gradients of a ViT and a GPT step on 16
// cores and never on 2 (where results stay those of one goroutine), and
// forced on every blocked product, the sweep over transposes, alpha, beta,
// strides and tile edges and the bias test match the float64 products.
func TestSgemmSplitK(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	for _, s := range [][3]int{{128, 128, 6400}, {256, 256, 2048}} {
		jb := &job{m: s[0], n: s[1], k: s[2], kern: active}
		if pr, pc := jb.split(); jb.splitK(pr, pc) < 4 {
			t.Errorf("%v on GOMAXPROCS 16: %d ranges of k, want ≥ 4", s, jb.splitK(pr, pc))
		}
	}
	if (&job{m: 12, n: 32, k: 1 << 18, kern: active}).splitK(1, 1) < 4 {
		t.Error("a 12×32 C summed over 262,144 is not shared out by ranges of k")
	}
	for _, s := range [][3]int{{2048, 1024, 256}, {6400, 128, 128}} {
		jb := &job{m: s[0], n: s[1], k: s[2], kern: active}
		if pr, pc := jb.split(); jb.splitK(pr, pc) != 1 {
			t.Errorf("%v on GOMAXPROCS 16: %d ranges of k, want 1", s, jb.splitK(pr, pc))
		}
	}
	runtime.GOMAXPROCS(2)
	for _, s := range [][3]int{{128, 128, 6400}, {256, 256, 2048}, {1024, 256, 2048}} {
		jb := &job{m: s[0], n: s[1], k: s[2], kern: active}
		if pr, pc := jb.split(); jb.splitK(pr, pc) != 1 {
			t.Errorf("%v on GOMAXPROCS 2: %d ranges of k, want 1", s, jb.splitK(pr, pc))
		}
	}
	for _, ranges := range []int{2, 5} {
		forceSplitK = ranges
		t.Run(fmt.Sprint(ranges), func(t *testing.T) {
			defer func() { forceSplitK = 0 }()
			sweep(t)
			TestSgemmBias(t)
		})
	}
}

// TestSgemmBias checks C = op(A)·op(B) + bias against a float64 product,
// over transposes, tile edges in m and n, several kc blocks, padded strides
// and the small, few-rows and blocked paths, with every kernel, in place
// and packed A.
func TestSgemmBias(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	sizes := [][3]int{{1, 1, 1}, {3, 5, 7}, {7, 17, 3}, {37, 41, 29}, {64, 48, 300}, {129, 33, 65}, {6, 16, 0}, {20, 20, 0}}
	for _, kern := range kernels() {
		for _, rows := range []bool{true, false} {
			withKernel(t, kern, func(t *testing.T) {
				useRows = rows
				defer func() { useRows = true }()
				for _, s := range sizes {
					for _, tA := range []bool{false, true} {
						for _, tB := range []bool{false, true} {
							m, n, k := s[0], s[1], s[2]
							lda, ldb, ldc := k+2, n+1, n+3
							if tA {
								lda = m + 2
							}
							if tB {
								ldb = k + 1
							}
							a := make([]float32, max(m, k)*lda)
							b := make([]float32, max(n, k)*ldb)
							bias := make([]float32, n)
							for _, s := range [][]float32{a, b, bias} {
								for i := range s {
									s[i] = rng.Float32() - 0.5
								}
							}
							c := make([]float32, m*ldc)
							for i := range c {
								c[i] = float32(math.NaN()) // not read
							}
							SgemmBias(tA, tB, m, n, k, a, lda, b, ldb, bias, c, ldc)
							for i := 0; i < m; i++ {
								for j := 0; j < n; j++ {
									want := float64(bias[j])
									for p := 0; p < k; p++ {
										av, bv := a[i*lda+p], b[p*ldb+j]
										if tA {
											av = a[p*lda+i]
										}
										if tB {
											bv = b[j*ldb+p]
										}
										want += float64(av) * float64(bv)
									}
									if got := c[i*ldc+j]; !(math.Abs(float64(got)-want) <= 1e-5*float64(k+1)) {
										t.Fatalf("%v tA %v tB %v: C[%d,%d] = %g, want %g", s, tA, tB, i, j, got, want)
									}
								}
							}
						}
					}
				}
			})
		}
	}
}

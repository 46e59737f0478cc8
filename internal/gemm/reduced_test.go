package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// reference is W·x + bias in float64 for W widened from r exactly as
// Row widens it.
func reference(r *Reduced, x, bias []float32) []float64 {
	y := make([]float64, r.Rows)
	row := make([]float32, r.Cols)
	for i := range y {
		r.Row(i, row)
		for j, w := range row {
			y[i] += float64(w) * float64(x[j])
		}
		if bias != nil {
			y[i] += float64(bias[i])
		}
	}
	return y
}

// closeTo checks got against want within float32 accumulation error:
// tol times the sum of |terms| bound, taken as Σ|w||x| ≤ scale.
func closeTo(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); d > tol*(1+math.Abs(want[i])) || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s: y[%d] = %v, want %v (|diff| %.3g)", what, i, got[i], want[i], d)
		}
	}
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// TestReducedMulVec checks the products against a float64 reference of
// the same widened weights, on the kernels and the Go loops, for sizes
// with and without tails (Cols not a multiple of 16, 32 or 64) and row
// counts below and above the parallel split.
func TestReducedMulVec(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range []Format{BF16, Int8} {
		for _, sz := range [][2]int{{1, 1}, {3, 5}, {7, 31}, {17, 33}, {64, 64}, {130, 100}, {257, 576}, {33, 1000}} {
			rows, cols := sz[0], sz[1]
			w, x, bias := randVec(rng, rows*cols), randVec(rng, cols), randVec(rng, rows)
			r, err := NewReduced(f, w, rows, cols)
			if err != nil {
				t.Fatal(err)
			}
			want := reference(r, x, bias)
			tol := 1e-5 * math.Sqrt(float64(cols))
			for _, kern := range reducedKernels() {
				name := fmt.Sprintf("%v/%dx%d/%s", f, rows, cols, kern)
				func() {
					defer setReducedKernel(kern)()
					y := make([]float32, rows)
					r.MulVec(y, x, bias)
					closeTo(t, name, y, want, tol)
					// Several rows: vector products (n ≤ mulVecRows) and the widened band path.
					for _, n := range []int{2, 9} {
						xs, ys := make([]float32, 0, n*cols), make([]float32, n*rows)
						for range n {
							xs = append(xs, x...)
						}
						r.Mul(ys, xs, bias, n)
						for tt := range n {
							closeTo(t, fmt.Sprintf("%s/Mul n=%d row %d", name, n, tt), ys[tt*rows:(tt+1)*rows], want, tol)
						}
					}
				}()
			}
		}
	}
}

// TestReducedAccuracy checks the conversions: bf16 within half an ulp of
// 8 significant bits, int8 within half a step of each block's scale.
func TestReducedAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rows, cols := 5, 77
	w := randVec(rng, rows*cols)
	w[3] = 0
	w[40] = 1e-30
	for _, f := range []Format{BF16, Int8} {
		r, err := NewReduced(f, w, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		row := make([]float32, cols)
		for i := 0; i < rows; i++ {
			r.Row(i, row)
			for j, v := range row {
				orig := w[i*cols+j]
				var bound float64
				if f == BF16 {
					bound = math.Abs(float64(orig)) * math.Pow(2, -8)
				} else {
					b := j / BlockSize * BlockSize
					var amax float64
					for _, u := range w[i*cols+b : i*cols+min(b+BlockSize, cols)] {
						amax = math.Max(amax, math.Abs(float64(u)))
					}
					bound = amax / 127 / 2 * (1 + 1e-6)
				}
				if d := math.Abs(float64(v) - float64(orig)); d > bound {
					t.Fatalf("%v: W[%d,%d] = %v became %v (|diff| %.3g > %.3g)", f, i, j, orig, v, d, bound)
				}
			}
		}
	}
}

// TestToBF16 checks rounding to nearest even and the special values.
func TestToBF16(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie, even below
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie, even above
		{math.Float32frombits(0x3f808001), 0x3f81},
		{float32(math.Inf(-1)), 0xff80},
		{math.MaxFloat32, 0x7f80}, // rounds up to +Inf, as PyTorch does
	} {
		if got := ToBF16(c.in); got != c.want {
			t.Errorf("ToBF16(%v) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if nan := FromBF16(ToBF16(float32(math.NaN()))); !math.IsNaN(float64(nan)) {
		t.Errorf("ToBF16(NaN) widened to %v", nan)
	}
}

func TestNewReducedRefuses(t *testing.T) {
	if _, err := NewReduced(BF16, make([]float32, 5), 2, 3); err == nil {
		t.Error("a (2, 3) matrix of 5 weights was accepted")
	}
	if _, err := NewReduced(Format(9), make([]float32, 6), 2, 3); err == nil {
		t.Error("an unknown format was accepted")
	}
}

// BenchmarkGEMV times y = W·x for one token at the LLaMA shapes
// (out×in: SmolLM-135M's 576 and 1536, TinyLlama-1.1B's 2048 and 5632,
// a vocabulary head) for float32 weights (this package's Sgemm) and the
// reduced formats, reporting GB/s of weight bytes read: compare with
// ops' BenchmarkMemBandwidth. Names ending /go, /avx2 or /avx512 run
// those kernels instead of the one MulVec selects.
func BenchmarkGEMV(b *testing.B) {
	for _, s := range [][2]int{{576, 1536}, {1536, 576}, {2048, 2048}, {5632, 2048}, {2048, 5632}, {32000, 2048}} {
		out, in := s[0], s[1]
		w := randSlice(out * in)
		x, y := randSlice(in), make([]float32, out)
		name := fmt.Sprintf("%dx%d", out, in)
		b.Run("f32/"+name, func(b *testing.B) {
			for b.Loop() {
				Sgemm(false, true, 1, out, in, 1, x, in, w, in, 0, y, out)
			}
			b.ReportMetric(float64(4*out*in)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
		for _, f := range []Format{BF16, Int8} {
			r, err := NewReduced(f, w, out, in)
			if err != nil {
				b.Fatal(err)
			}
			for _, kern := range reducedKernels() {
				suffix := "/" + kern
				if kern == defaultReducedKernel() {
					suffix = "" // the one MulVec selects
				}
				b.Run(f.String()+"/"+name+suffix, func(b *testing.B) {
					defer setReducedKernel(kern)()
					for b.Loop() {
						r.MulVec(y, x, nil)
					}
					b.ReportMetric(float64(r.Bytes())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				})
			}
		}
	}
}

// TestReducedConcurrent runs products of one matrix from several
// goroutines (run with -race): a Reduced is read-only, and Mul's bands,
// reused between calls, are each call's own.
func TestReducedConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	rows, cols, n := 300, 200, 9
	r, err := NewReduced(Int8, randVec(rng, rows*cols), rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	x := randVec(rng, cols)
	want := make([]float32, rows)
	r.MulVec(want, x, nil)
	xs := randVec(rng, n*cols)
	wantMul := make([]float32, n*rows)
	r.Mul(wantMul, xs, nil, n)
	done := make(chan bool)
	for range 4 {
		go func() {
			y, ys := make([]float32, rows), make([]float32, n*rows)
			ok := true
			for range 20 {
				r.MulVec(y, x, nil)
				ok = ok && slices.Equal(y, want)
				r.Mul(ys, xs, nil, n)
				ok = ok && slices.Equal(ys, wantMul)
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Fatal("concurrent products differ")
		}
	}
}

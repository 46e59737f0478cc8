package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas/gonum"
)

// benchShapes are the model's products: m×k times k×n.
var benchShapes = []struct{ m, k, n int }{
	{2048, 256, 768},
	{2048, 256, 1024},
	{2048, 1024, 256},
	{2048, 256, 512},
	{128, 64, 128},
}

// sgemmFunc is the Sgemm signature shared by this package and a gonum adapter.
type sgemmFunc func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

var benchImpls = []struct {
	name string
	f    sgemmFunc
}{
	{"zoo", Sgemm},
	{"gonum", func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
		gonum.Implementation{}.Sgemm(trans(tA), trans(tB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}},
}

func randSlice(n int) []float32 {
	rng := rand.New(rand.NewPCG(7, 8))
	s := make([]float32, n)
	for i := range s {
		s[i] = rng.Float32() - 0.5
	}
	return s
}

// BenchmarkSgemm times C = op(A)·op(B) on the model's shapes for the
// transposes the forward and backward passes use. The 128×64×128 per-head
// product runs 64 times per op, as a batched matmul calls it.
func BenchmarkSgemm(b *testing.B) {
	for _, impl := range benchImpls {
		for _, s := range benchShapes {
			batch := 1
			if s.m == 128 {
				batch = 64
			}
			for _, tt := range []string{"NN", "NT", "TN"} {
				tA, tB := tt[0] == 'T', tt[1] == 'T'
				lda, ldb := DenseStrides(tA, tB, s.m, s.n, s.k)
				name := fmt.Sprintf("%s/%dx%dx%d", impl.name, s.m, s.k, s.n)
				if batch > 1 {
					name += fmt.Sprintf("x%d", batch)
				}
				b.Run(name+"/"+tt, func(b *testing.B) {
					a := randSlice(batch * s.m * s.k)
					bb := randSlice(batch * s.k * s.n)
					c := make([]float32, batch*s.m*s.n)
					mk, kn, mn := s.m*s.k, s.k*s.n, s.m*s.n
					b.ReportAllocs()
					for b.Loop() {
						for i := 0; i < batch; i++ {
							impl.f(tA, tB, s.m, s.n, s.k, 1, a[i*mk:(i+1)*mk], lda, bb[i*kn:(i+1)*kn], ldb, 0, c[i*mn:(i+1)*mn], s.n)
						}
					}
					flops := 2 * float64(s.m*s.n*s.k*batch) * float64(b.N)
					b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkKernel times the micro-kernels alone on L1-resident panels: the
// ceiling for the blocked products.
func BenchmarkKernel(b *testing.B) {
	for _, kern := range kernels() {
		b.Run(kern.name, func(b *testing.B) {
			const k = 128
			a, bb := randSlice(kern.mr*k), randSlice(kern.nr*k)
			c := make([]float32, kern.mr*kern.nr)
			for b.Loop() {
				kern.fn(k, &a[0], &bb[0], &c[0], kern.nr, 1, 1)
			}
			b.ReportMetric(2*float64(kern.mr*kern.nr*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkSgemmRows times products with a few rows, as in generation with
// a key-value cache (m = 1) and short prompts.
func BenchmarkSgemmRows(b *testing.B) {
	for _, impl := range benchImpls {
		for _, s := range []struct{ m, k, n int }{{1, 256, 768}, {1, 1024, 256}, {4, 256, 768}, {16, 256, 768}} {
			for _, tt := range []string{"NN", "NT"} {
				tB := tt[1] == 'T'
				b.Run(fmt.Sprintf("%s/%dx%dx%d/%s", impl.name, s.m, s.k, s.n, tt), func(b *testing.B) {
					a, bb, c := randSlice(s.m*s.k), randSlice(s.k*s.n), make([]float32, s.m*s.n)
					_, ldb := DenseStrides(false, tB, s.m, s.n, s.k)
					b.ReportAllocs()
					for b.Loop() {
						impl.f(false, tB, s.m, s.n, s.k, 1, a, s.k, bb, ldb, 0, c, s.n)
					}
					b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkSgemmViT times the products of the ViT Fashion-MNIST training
// step (B128: 6400 tokens, width 128, MLP 512, 4 heads of 32 over 50
// tokens) with the transposes the step uses: the forward linear layers
// (NT), their input gradients (NN) and weight gradients (TN), and the
// attention's per-head products, 512 per batched matmul.
func BenchmarkSgemmViT(b *testing.B) {
	for _, s := range []struct {
		m, k, n, batch int
		tt             string
	}{{6400, 128, 384, 1, "NT"}, {6400, 384, 128, 1, "NN"}, {384, 6400, 128, 1, "TN"},
		{6400, 128, 512, 1, "NT"}, {6400, 512, 128, 1, "NN"}, {512, 6400, 128, 1, "TN"},
		{6400, 512, 128, 1, "NT"}, {6400, 128, 512, 1, "NN"}, {128, 6400, 512, 1, "TN"},
		{6400, 128, 128, 1, "NT"}, {6400, 128, 128, 1, "NN"}, {128, 6400, 128, 1, "TN"},
		{50, 32, 50, 512, "NT"}, {50, 50, 32, 512, "NN"}, {50, 50, 32, 512, "TN"}} {
		for _, tt := range []string{s.tt} {
			tA, tB := tt[0] == 'T', tt[1] == 'T'
			lda, ldb := DenseStrides(tA, tB, s.m, s.n, s.k)
			batch := s.batch
			b.Run(fmt.Sprintf("%dx%dx%dx%d/%s", s.m, s.k, s.n, batch, tt), func(b *testing.B) {
				a := randSlice(batch * s.m * s.k)
				bb := randSlice(batch * s.k * s.n)
				c := make([]float32, batch*s.m*s.n)
				mk, kn, mn := s.m*s.k, s.k*s.n, s.m*s.n
				for b.Loop() {
					for i := 0; i < batch; i++ {
						Sgemm(tA, tB, s.m, s.n, s.k, 1, a[i*mk:(i+1)*mk], lda, bb[i*kn:(i+1)*kn], ldb, 0, c[i*mn:(i+1)*mn], s.n)
					}
				}
				flops := 2 * float64(s.m*s.n*s.k*batch) * float64(b.N)
				b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkSgemmVocab is a BERT-Mini MLM head's products (width 256,
// vocabulary 30,522) on the pipeline's 640 masked slots and on all 4,096
// positions of a (32, 128) batch: the decoder (NT), its input gradient
// (NN) and its weight gradient (TN). C is short and very wide, so how the
// cores share it decides how often the 31 MB weight is packed (sharing
// out columns when B is large measured the same, 2026-11-23: not kept).
func BenchmarkSgemmVocab(b *testing.B) {
	for _, s := range []struct {
		m, k, n int
		tt      string
	}{{640, 256, 30522, "NT"}, {640, 30522, 256, "NN"}, {30522, 640, 256, "TN"},
		{4096, 256, 30522, "NT"}, {4096, 30522, 256, "NN"}, {30522, 4096, 256, "TN"}} {
		tA, tB := s.tt[0] == 'T', s.tt[1] == 'T'
		lda, ldb := DenseStrides(tA, tB, s.m, s.n, s.k)
		b.Run(fmt.Sprintf("%dx%dx%d/%s", s.m, s.k, s.n, s.tt), func(b *testing.B) {
			a, bb, c := randSlice(s.m*s.k), randSlice(s.k*s.n), make([]float32, s.m*s.n)
			for b.Loop() {
				Sgemm(tA, tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
			}
			b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

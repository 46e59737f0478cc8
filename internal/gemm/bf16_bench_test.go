package gemm

import (
	"fmt"
	"testing"
)

// BenchmarkSgemmBF16 times Sgemm (f32) and SgemmBF16 (bf16) side by side,
// each shape's two rows in a row, on the training steps' products: the
// GPT and BERT-Mini linear layers at B·T = 4096 (width 256, MLP 1024, the
// fused QKV 768) with the forward (NT), input-gradient (NN) and
// weight-gradient (TN) transposes; the LM heads (vocabulary 512, GPT's
// benchmark, and 30,522, BERT's); the ViT's 6400-patch layers; and the
// attention's per-head products (T 128, head 64), 64 per batched call;
// and the ViT recipe's attention tiles (50 tokens, head 32), 256 per call.
//
//	go test ./internal/gemm -run '^$' -bench SgemmBF16 -benchtime 20x
func BenchmarkSgemmBF16(b *testing.B) {
	type shape struct {
		m, k, n, batch int
		tts            []string
	}
	all := []string{"NT", "NN", "TN"}
	shapes := []shape{
		{4096, 256, 1024, 1, all}, {4096, 1024, 256, 1, all}, {4096, 256, 768, 1, all},
		{4096, 256, 512, 1, all}, {4096, 256, 30522, 1, []string{"NT"}},
		{6400, 128, 384, 1, all},
		{128, 64, 128, 64, []string{"NT", "TN"}}, {128, 128, 64, 64, []string{"NN", "TN"}},
		{50, 32, 50, 256, []string{"NT", "TN"}}, {50, 50, 32, 256, []string{"NN", "TN"}},
	}
	impls := []struct {
		name string
		f    sgemmFunc
	}{{"f32", Sgemm}, {"bf16", SgemmBF16}}
	for _, s := range shapes {
		for _, tt := range s.tts {
			tA, tB := tt[0] == 'T', tt[1] == 'T'
			lda, ldb := DenseStrides(tA, tB, s.m, s.n, s.k)
			a := randSlice(s.batch * s.m * s.k)
			bb := randSlice(s.batch * s.k * s.n)
			c := make([]float32, s.batch*s.m*s.n)
			mk, kn, mn := s.m*s.k, s.k*s.n, s.m*s.n
			for _, impl := range impls {
				b.Run(fmt.Sprintf("%dx%dx%dx%d/%s/%s", s.m, s.k, s.n, s.batch, tt, impl.name), func(b *testing.B) {
					for b.Loop() {
						for i := 0; i < s.batch; i++ {
							impl.f(tA, tB, s.m, s.n, s.k, 1, a[i*mk:(i+1)*mk], lda, bb[i*kn:(i+1)*kn], ldb, 0, c[i*mn:(i+1)*mn], s.n)
						}
					}
					flops := 2 * float64(s.m*s.n*s.k*s.batch) * float64(b.N)
					b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkKernelBF16 times the bf16 kernels alone on L1-resident panels
// (k counted in products, as BenchmarkKernel's float32 ones).
func BenchmarkKernelBF16(b *testing.B) {
	for _, kern := range bf16Kernels() {
		b.Run(kern.name, func(b *testing.B) {
			const kp = 64 // 128 products deep
			a, bb := randSlice(kern.mr*kp), randSlice(kern.nr*kp)
			for i := range a { // finite pairs
				a[i] = RoundBF16(a[i])
			}
			for i := range bb {
				bb[i] = RoundBF16(bb[i])
			}
			c := make([]float32, kern.mr*kern.nr)
			for b.Loop() {
				kern.fn(kp, &a[0], &bb[0], &c[0], kern.nr, 1, 1)
			}
			b.ReportMetric(2*float64(kern.mr*kern.nr*2*kp)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

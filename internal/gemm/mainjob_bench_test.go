package gemm

import (
	"fmt"
	"testing"
)

// BenchmarkSgemmMainJob times the main job's products (`zoo pretrain gpt`:
// 12 sequences of 64 tokens, 128 wide, 4 heads, MLP 512, 92 characters),
// each in the three transposes a linear layer's forward (NT: x·Wᵀ),
// input gradient (NN) and weight gradient (TN) use, in GFLOP/s, to read
// against BenchmarkPeakFMA:
//
//	go test ./internal/gemm -run '^$' -bench 'PeakFMA|SgemmMainJob' -benchtime 200x -count 3
func BenchmarkSgemmMainJob(b *testing.B) {
	for _, s := range []struct {
		name    string
		m, k, n int
	}{
		{"qkv", 768, 128, 384}, {"proj", 768, 128, 128}, {"fc", 768, 128, 512}, {"fc2", 768, 512, 128}, {"head", 768, 128, 92},
	} {
		for _, tt := range []string{"NT", "NN", "TN"} {
			// The transposes of a linear layer y = x·Wᵀ (x: m×k, W: n×k):
			// forward y = x·Wᵀ (m×k by k×n), input gradient dx = dy·W
			// (m×n by n×k), weight gradient dW = dyᵀ·x (n×m by m×k).
			m, k, n := s.m, s.k, s.n
			switch tt {
			case "NN":
				m, k, n = s.m, s.n, s.k
			case "TN":
				m, k, n = s.n, s.m, s.k
			}
			tA, tB := tt[0] == 'T', tt[1] == 'T'
			lda, ldb := DenseStrides(tA, tB, m, n, k)
			b.Run(fmt.Sprintf("%s_%dx%dx%d/%s", s.name, m, k, n, tt), func(b *testing.B) {
				a, bb, c := randSlice(m*k), randSlice(k*n), make([]float32, m*n)
				for b.Loop() {
					Sgemm(tA, tB, m, n, k, 1, a, lda, bb, ldb, 0, c, n)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

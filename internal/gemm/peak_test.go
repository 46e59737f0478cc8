package gemm

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// BenchmarkPeakFMA measures this machine's float32 peak: an FMA-bound loop
// (24 independent 512-bit VFMADD231PS an iteration, no memory operands) on
// 1 goroutine and on GOMAXPROCS goroutines at once, in GFLOP/s. It is the
// ceiling the GEMM benchmarks are read against ("% of peak"):
//
//	go test ./internal/gemm -run '^$' -bench PeakFMA -benchtime 20x -count 5
//
// Each iteration is 2e9 FLOPs a goroutine; the best of -count is the peak
// (a shared machine only ever lowers it).
func BenchmarkPeakFMA(b *testing.B) {
	if fmaPeak(1) == 0 {
		b.Skip("needs amd64 with AVX-512")
	}
	const n = 2_000_000_000 / (24 * 16 * 2)
	for _, g := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("goroutines%d", g), func(b *testing.B) {
			var flops float64
			start := time.Now()
			for i := 0; i < b.N; i++ {
				var wg sync.WaitGroup
				var mu sync.Mutex
				for w := 0; w < g; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						f := fmaPeak(n)
						mu.Lock()
						flops += f
						mu.Unlock()
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(flops/time.Since(start).Seconds()/1e9, "GFLOP/s")
		})
	}
}

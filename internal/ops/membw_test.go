package ops

import (
	"fmt"
	"sync"
	"testing"
)

// BenchmarkMemBandwidth measures the memory bandwidth that bounds decoding
// at batch 1, which reads every weight once per token: GPT-2 small's 498 MB
// of float32 parameters at B GB/s take at least 498/B ms per token.
//
// sum is STREAM's idea (McCalpin, "Memory bandwidth and machine balance in
// current high performance computers", IEEE TCCA Newsletter, 1995) reduced
// to a read: 2 goroutines each sum half of a 512 MiB float32 slice, far
// larger than the caches, with this package's vector sum, which adds some
// 40 GB/s of cached data per core on AVX2 (a scalar Go loop, 18, could
// fall short of the memory). sgemv is the product of one row with the same
// bytes as a (k, n) = (768, 174762) matrix through this build's sgemm, as a
// linear layer's y = x·Wᵀ computes it for one token: what the kernel
// reaches of the bandwidth. GB/s is 10⁹ bytes read per second; the slice
// is written once before either runs.
func BenchmarkMemBandwidth(b *testing.B) {
	const n = 512 << 20 / 4 // float32s in 512 MiB
	var data []float32
	load := func() []float32 {
		if data == nil {
			data = make([]float32, n)
			for i := range data {
				data[i] = float32(i&1023) / 1024
			}
		}
		return data
	}
	report := func(b *testing.B, bytes int) {
		b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	}
	b.Run("sum_f32_512MiB_2goroutines", func(b *testing.B) {
		x := load()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			sumSink = parallelSum(x, 2)
		}
		report(b, 4*len(x))
	})
	const k = 768
	cols := n / k
	b.Run(fmt.Sprintf("sgemv_1x%dx%d_NT", k, cols), func(b *testing.B) {
		w := load()[:k*cols]
		x, y := make([]float32, k), make([]float32, cols)
		for i := range x {
			x[i] = 1 / float32(i+1)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			sgemm(false, true, 1, cols, k, x, k, w, k, 0, y, cols)
		}
		report(b, 4*len(w))
	})
}

var sumSink float32

// parallelSum is the sum of x, split into parts contiguous pieces summed
// at once.
func parallelSum(x []float32, parts int) float32 {
	sums := make([]float32, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[p] = vecSum(x[p*len(x)/parts : (p+1)*len(x)/parts])
		}()
	}
	wg.Wait()
	var s float32
	for _, v := range sums {
		s += v
	}
	return s
}

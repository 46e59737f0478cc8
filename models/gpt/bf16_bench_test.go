package gpt

import (
	"testing"

	"github.com/d73a19ff/zoo/internal/graphtest"
)

// BenchmarkTrainStepBF16 is BenchmarkTrainStep's step in float32 and with
// bf16 products, interleaved (each iteration runs one step of each, so
// that a shared machine's load falls on both alike), reporting each one's
// mean and least ms/step and the median of the iterations' ratios
// (f32 time / bf16 time): on a loaded machine the median ratio and the
// least times are the steadiest numbers.
//
//	go test ./models/gpt -run '^$' -bench TrainStepBF16 -benchtime 10x
func BenchmarkTrainStepBF16(b *testing.B) {
	b.Run("V512_T128_d256_h4_L4_ff1024_B16", func(b *testing.B) {
		const batch, t = 16, 128
		var steps [2]func()
		for i, bf16 := range []bool{false, true} {
			ts, err := newTrainStepAs(benchConfig(), batch, t, bf16)
			if err != nil {
				b.Fatal(err)
			}
			defer ts.close()
			steps[i] = func() {
				if err := ts.step(); err != nil {
					b.Fatal(err)
				}
			}
		}
		graphtest.InterleaveBF16(b, steps[0], steps[1])
	})
}

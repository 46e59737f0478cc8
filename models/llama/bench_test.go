package llama

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/internal/peakrss"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// weightBytes is what one decoding step reads of m's weights: every
// matrix but an untied token embedding (a step gathers one of its rows),
// in its format, and the float32 vectors.
func weightBytes(m *ForCausalLM) int64 {
	ls, err := m.matrices()
	if err != nil {
		panic(err)
	}
	var n int64
	for _, l := range ls {
		n += l.(interface{ ReducedBytes() int64 }).ReducedBytes()
	}
	if m.EmbedTokens.ReducedBytes() > 0 && m.LMHead != nil {
		n -= m.EmbedTokens.ReducedBytes()
	}
	f32 := int64(m.NumParams()) // the store's parameters: all of them in float32, the vectors only once reduced
	if m.WeightFormat() == models.WeightsF32 && m.LMHead != nil {
		f32 -= int64(m.Config.VocabSize * m.Config.HiddenSize)
	}
	return n + 4*f32
}

// BenchmarkGenerate is greedy decoding at batch 1 of random-weight models
// of published shapes, with the weights in float32, bf16 and int8
// (models.WithWeightFormat, converted as LoadForCausalLM converts them):
// a 128-token prompt, then 128 new tokens through the KV cache.
// ms/token is the decoding steps alone: a call for 128 new tokens less
// a call for 1 (the prompt and one step), over 127; prefill_tok/s is the
// prompt over that second call. weight_MB is what a step reads of the
// weights (weightBytes), and GB/s that over ms/token: compare it with
// internal/ops' BenchmarkMemBandwidth. peakRSS_MB is the process's peak
// so far (earlier sub-benchmarks included: run one per process to read
// it). Two first, untimed calls, of the two timed lengths, compile the
// graphs. SmolLM-135M always runs; TinyLlama-1.1B (4.4 GB in float32,
// 6.6 GB at the peak of a conversion) only with ZOO_BENCH_TINYLLAMA=1.
func BenchmarkGenerate(b *testing.B) {
	const promptLen, newTokens = 128, 128
	sizes := []struct {
		name string
		cfg  Config
	}{{"smollm-135m", SmolLM135M()}}
	if os.Getenv("ZOO_BENCH_TINYLLAMA") == "1" {
		sizes = append(sizes, struct {
			name string
			cfg  Config
		}{"tinyllama-1.1b", TinyLlama()})
	}
	for _, sz := range sizes {
		prompt := make([]int, promptLen)
		for i := range prompt {
			prompt[i] = (i*7919 + 13) % sz.cfg.VocabSize
		}
		for _, f := range []models.WeightFormat{models.WeightsF32, models.WeightsBF16, models.WeightsInt8} {
			b.Run(fmt.Sprintf("%s/%s/P%d_N%d_B1", sz.name, f, promptLen, newTokens), func(b *testing.B) {
				m, err := NewForCausalLM(sz.cfg, layers.WithSeed(1))
				if err != nil {
					b.Fatal(err)
				}
				if err := m.reduce(f); err != nil {
					b.Fatal(err)
				}
				gen := func(n int) time.Duration {
					began := time.Now()
					out, err := m.Generate([][]int{prompt}, GenerateConfig{SampleConfig: decode.Greedy(n)})
					if err != nil {
						b.Fatal(err)
					}
					if len(out[0]) != n {
						b.Fatalf("%d new tokens, want %d", len(out[0]), n)
					}
					return time.Since(began)
				}
				// Compile the graphs: a call for one new token and one for
				// newTokens have KV caches of different capacities, so
				// graphs of their own (layers.CausalGraphs); warming up
				// with another count would leave the first timed calls
				// compiling, half a second of a SmolLM prefill.
				gen(1)
				gen(newTokens)
				var prefill, decoding time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					one := gen(1)
					prefill += one
					decoding += gen(newTokens) - one
				}
				msTok := decoding.Seconds() * 1000 / float64((newTokens-1)*b.N)
				mb := float64(weightBytes(m)) / 1e6
				b.ReportMetric(msTok, "ms/token")
				b.ReportMetric(float64(promptLen*b.N)/prefill.Seconds(), "prefill_tok/s")
				b.ReportMetric(mb, "weight_MB")
				b.ReportMetric(mb/msTok, "GB/s")
				if rss, ok := peakrss.MB(); ok {
					b.ReportMetric(rss, "peakRSS_MB")
				}
			})
		}
	}
}

// BenchmarkPrefill is the prefill alone of BenchmarkGenerate's decodings:
// a call of Generate for one new token (the prompt through the KV cache,
// then the one token sampled from the last position's logits) at batch 1,
// per prompt length P, on the same random-weight models and formats. The
// first, untimed call compiles the graphs, so prefill_tok/s is the
// forward pass alone. cpu_ms/op is the process's CPU time per prefill
// (both cores' together): on a machine shared with other work it moves
// far less with the load than the wall clock does. SmolLM-135M always runs; TinyLlama-1.1B only with
// ZOO_BENCH_TINYLLAMA=1.
func BenchmarkPrefill(b *testing.B) {
	sizes := []struct {
		name string
		cfg  Config
	}{{"smollm-135m", SmolLM135M()}}
	if os.Getenv("ZOO_BENCH_TINYLLAMA") == "1" {
		sizes = append(sizes, struct {
			name string
			cfg  Config
		}{"tinyllama-1.1b", TinyLlama()})
	}
	for _, sz := range sizes {
		for _, f := range []models.WeightFormat{models.WeightsF32, models.WeightsBF16, models.WeightsInt8} {
			var m *ForCausalLM
			for _, promptLen := range []int{128} {
				b.Run(fmt.Sprintf("%s/%s/P%d_B1", sz.name, f, promptLen), func(b *testing.B) {
					if m == nil {
						var err error
						if m, err = NewForCausalLM(sz.cfg, layers.WithSeed(1)); err != nil {
							b.Fatal(err)
						}
						if err := m.reduce(f); err != nil {
							b.Fatal(err)
						}
					}
					prompt := make([]int, promptLen)
					for i := range prompt {
						prompt[i] = (i*7919 + 13) % sz.cfg.VocabSize
					}
					gen := func() {
						out, err := m.Generate([][]int{prompt}, GenerateConfig{SampleConfig: decode.Greedy(1)})
						if err != nil {
							b.Fatal(err)
						}
						if len(out[0]) != 1 {
							b.Fatalf("%d new tokens, want 1", len(out[0]))
						}
					}
					gen() // compile the graphs
					b.ResetTimer()
					cpu0, cpuOK := cpuTime()
					for i := 0; i < b.N; i++ {
						gen()
					}
					b.ReportMetric(float64(promptLen*b.N)/b.Elapsed().Seconds(), "prefill_tok/s")
					if cpu1, ok := cpuTime(); ok && cpuOK {
						b.ReportMetric(float64((cpu1-cpu0).Milliseconds())/float64(b.N), "cpu_ms/op")
					}
				})
			}
		}
	}
}

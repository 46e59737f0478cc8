package gpt

import (
	"fmt"
	"testing"
	"time"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/internal/peakrss"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/train"
)

// benchConfig is the reference size: V512, T128, d256, 4 heads,
// 4 layers, d_ff 1024.
func benchConfig() Config {
	c := Micro()
	c.VocabSize, c.NPositions, c.NEmbd, c.NHead, c.NLayer, c.NInner = 512, 128, 256, 4, 4, 1024
	c.BOSTokenID, c.EOSTokenID = 0, 0
	return c
}

// BenchmarkTrainStep is a whole training step: forward, backward of the LM
// loss and an AdamW update (as PyTorch's reference step), float32, dropout
// off. The _bf16 row is the same step with the graph's matrix products in
// bf16 (ops.UseBF16, as the engine under --bf16), against
// tools/pytorch/bench_gpt.py --bf16 (torch.autocast) in tools/bench.sh bf16.
func BenchmarkTrainStep(b *testing.B) {
	for _, bf16 := range []bool{false, true} {
		name := "V512_T128_d256_h4_L4_ff1024_B16"
		if bf16 {
			name += "_bf16"
		}
		b.Run(name, func(b *testing.B) {
			const batch, t = 16, 128
			ts, err := newTrainStepAs(benchConfig(), batch, t, bf16)
			if err != nil {
				b.Fatal(err)
			}
			defer ts.close()
			if err := ts.step(); err != nil { // warm-up: buffers are allocated once
				b.Fatal(err)
			}
			ts.time(b)
			b.ReportMetric(float64(batch*t*b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/step")
		})
	}
}

// BenchmarkTrainStepLong is BenchmarkTrainStep's step at lengths 128 to
// 2048 with 2048 tokens per batch (B = 2048/T: B16 at T128 … B1 at T2048),
// so that the linear layers' work stays fixed and what grows is attention,
// whose (B·h, T, T) scores grow as T per token. n_positions is 2048 in
// every row, so every row has the same parameters (3.8M; the T128 row
// differs from BenchmarkTrainStep's only by those extra positions). Each
// row reports ms/op and the process's peak RSS (peakRSS_MB), which is the
// row's own only when the row runs alone in its process, as tools/bench.sh
// long runs it:
//
//	go test -c -o /tmp/gpt.test ./models/gpt
//	/tmp/gpt.test -test.run '^$' -test.bench 'TrainStepLong/^V512_T1024_d256_h4_L4_ff1024_B2$' -test.benchtime 3x
//
// tools/pytorch/bench_long.py has the same rows.
func BenchmarkTrainStepLong(b *testing.B) {
	const tokens = 2048
	cfg := benchConfig()
	cfg.NPositions = 2048
	for _, t := range []int{128, 256, 512, 1024, 2048} {
		batch := tokens / t
		// Built, and run once, by the row's first call and reused by the
		// second: testing calls a benchmark with N = 1 before the timed N,
		// and building twice would count two graphs in the peak.
		var ts *trainStep
		b.Run(fmt.Sprintf("V%d_T%d_d%d_h%d_L%d_ff%d_B%d", cfg.VocabSize, t, cfg.NEmbd, cfg.NHead, cfg.NLayer, cfg.Inner(), batch), func(b *testing.B) {
			if ts == nil {
				var err error
				if ts, err = newTrainStep(cfg, batch, t); err != nil {
					b.Fatal(err)
				}
				if err := ts.step(); err != nil {
					b.Fatal(err)
				}
			}
			ts.time(b)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N), "ms/op")
			b.ReportMetric(float64(batch*t*b.N)/b.Elapsed().Seconds(), "tokens/s")
			if mb, ok := peakrss.MB(); ok {
				b.ReportMetric(mb, "peakRSS_MB")
			}
		})
		if ts != nil {
			ts.close()
		}
	}
}

// trainStep is one compiled training step of a model on a fixed batch
// (batch, t) of token ids and next-token targets.
type trainStep struct {
	vm   gorgonia.VM
	opt  *train.AdamW
	vals []gorgonia.Value
}

// newTrainStep builds the forward, the backward of the mean cross-entropy
// and an AdamW optimizer (the package's defaults, learning rate 1e-4) for
// a model of cfg (seed 1) on a batch (batch, t).
func newTrainStep(cfg Config, batch, t int) (*trainStep, error) {
	return newTrainStepAs(cfg, batch, t, false)
}

// newTrainStepAs is newTrainStep, with the graph's matrix products in bf16
// (ops.UseBF16 after the gradients, as the engine under --bf16) when bf16
// is set.
func newTrainStepAs(cfg Config, batch, t int, bf16 bool) (*trainStep, error) {
	m, err := New(cfg, layers.WithSeed(1))
	if err != nil {
		return nil, err
	}
	v := cfg.VocabSize
	g := m.Store.NewGraph()
	ids, targets := g.IntInput("input_ids", batch, t), g.IntInput("labels", batch, t)
	for i, x := range ids.Value().Data().([]int) {
		ids.Value().Data().([]int)[i] = (i*31 + x) % v
		targets.Value().Data().([]int)[i] = (i*17 + 5) % v
	}
	loss, _, err := m.Loss(g, Inputs{IDs: ids}, targets)
	if err != nil {
		return nil, err
	}
	grads, err := gorgonia.Grad(loss, g.Learnables()...)
	if err != nil {
		return nil, err
	}
	if bf16 {
		ops.UseBF16(g.ExprGraph)
	}
	ts := &trainStep{vals: make([]gorgonia.Value, len(grads))}
	for i := range grads {
		gorgonia.Read(grads[i], &ts.vals[i])
	}
	if ts.opt, err = train.NewAdamW(g.Params(), train.DefaultAdamWConfig()); err != nil {
		return nil, err
	}
	if ts.vm, err = g.Machine(layers.SharedOutputs()); err != nil { // the engine's machine
		return nil, err
	}
	return ts, nil
}

// step runs forward and backward and updates the parameters.
func (ts *trainStep) step() error {
	if err := ts.vm.RunAll(); err != nil {
		return err
	}
	ts.vm.Reset()
	return ts.opt.Step(ts.vals, 1e-4)
}

func (ts *trainStep) close() { ts.vm.Close() }

// time runs b.N timed steps (the benchmarks' loop), after the warm-up.
func (ts *trainStep) time(b *testing.B) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := ts.step(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGenerate is greedy decoding of 112 tokens after a 16-token
// prompt, batch 1, with and without the KV cache. The model keeps its
// compiled graphs between calls, so an untimed first call compiles them
// (PyTorch's benchmark warms up too); ms/first-call is that call's time,
// after ReleaseGraphs.
func BenchmarkGenerate(b *testing.B) {
	m, err := New(benchConfig(), layers.WithSeed(1))
	if err != nil {
		b.Fatal(err)
	}
	prompt := make([]int, 16)
	for i := range prompt {
		prompt[i] = i * 7
	}
	for _, c := range []struct {
		name    string
		noCache bool
	}{{"cache", false}, {"nocache", true}} {
		b.Run(c.name+"/V512_d256_h4_L4_prompt16_new112_B1", func(b *testing.B) {
			cfg := Greedy(112)
			cfg.NoCache = c.noCache
			m.ReleaseGraphs()
			began := time.Now()
			if _, err := m.Generate([][]int{prompt}, cfg); err != nil {
				b.Fatal(err)
			}
			first := time.Since(began)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.Generate([][]int{prompt}, cfg); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(112*b.N), "ms/token")
			b.ReportMetric(float64(first.Microseconds())/1000, "ms/first-call")
		})
	}
}

// BenchmarkGenerateGPT2Small is greedy decoding through the KV cache by
// GPT-2 small (124,439,808 parameters, float32, random weights from seed
// 1), batch 1: a 16-token prompt, then 64 new tokens. Building the model is
// outside the timing; the decoding graphs are built inside, once per call,
// as in BenchmarkGenerate. ms/token is a whole call (prefill included) over
// the 64 tokens. param_MB is the parameters' size in MB: every token reads
// all of them once, so param_MB over internal/ops' BenchmarkMemBandwidth
// bounds ms/token from below (tools/bench.sh decode prints the bound).
// tools/pytorch/bench_gpt2_generate.py is the PyTorch side.
func BenchmarkGenerateGPT2Small(b *testing.B) {
	const promptLen, newTokens = 16, 64
	cfg := GPT2Small()
	m, err := New(cfg, layers.WithSeed(1))
	if err != nil {
		b.Fatal(err)
	}
	prompt := make([]int, promptLen)
	for i := range prompt {
		prompt[i] = (i*7919 + 13) % cfg.VocabSize
	}
	b.Run(fmt.Sprintf("P%d_N%d_B1", promptLen, newTokens), func(b *testing.B) {
		gen := Greedy(newTokens)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			out, err := m.Generate([][]int{prompt}, gen)
			if err != nil {
				b.Fatal(err)
			}
			if len(out[0]) != newTokens {
				b.Fatalf("%d new tokens, want %d", len(out[0]), newTokens)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(newTokens*b.N), "ms/token")
		b.ReportMetric(float64(m.NumParams())*float64(m.Store.Dtype().Size())/1e6, "param_MB")
		if mb, ok := peakrss.MB(); ok {
			b.ReportMetric(mb, "peakRSS_MB")
		}
	})
}

// BenchmarkCachedStepByPosition is one KV-cache decoding step of the
// benchmark model (n_positions 1024) at three depths of one cache of
// capacity 1,024: a 16-token prompt and 1,008 new tokens fill it, and the
// time between consecutive tokens is averaged over the 16 steps after
// positions 16, 256 and 1,008. With attention that reads only the filled
// slots, ms/token grows with the position, not with the capacity.
func BenchmarkCachedStepByPosition(b *testing.B) {
	cfg := benchConfig()
	cfg.NPositions = 1024
	m, err := New(cfg, layers.WithSeed(1))
	if err != nil {
		b.Fatal(err)
	}
	prompt := make([]int, 16)
	for i := range prompt {
		prompt[i] = i * 7
	}
	const window = 16
	starts := []int{16, 256, 1024 - window}
	b.Run("V512_d256_h4_L4_C1024_B1", func(b *testing.B) {
		sums := make([]time.Duration, len(starts))
		for i := 0; i < b.N; i++ {
			times := make([]time.Time, 0, 1024)
			gc := Greedy(1024 - len(prompt))
			gc.OnToken = func(int, int) { times = append(times, time.Now()) }
			if _, err := m.Generate([][]int{prompt}, gc); err != nil {
				b.Fatal(err)
			}
			for k, s := range starts {
				lo, hi := s-len(prompt), s-len(prompt)+window-1 // token j sits at position len(prompt)+j
				sums[k] += times[hi].Sub(times[lo])
			}
		}
		for k, s := range starts {
			b.ReportMetric(float64(sums[k].Microseconds())/1000/float64((window-1)*b.N), fmt.Sprintf("ms/token@%d", s))
		}
	})
}

package gpt

import (
	"testing"
	"time"

	"gorgonia.org/gorgonia"

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
// off.
func BenchmarkTrainStep(b *testing.B) {
	b.Run("V512_T128_d256_h4_L4_ff1024_B16", func(b *testing.B) {
		const batch, t = 16, 128
		m, err := New(benchConfig(), layers.WithSeed(1))
		if err != nil {
			b.Fatal(err)
		}
		g := m.Store.NewGraph()
		ids, targets := g.IntInput("input_ids", batch, t), g.IntInput("labels", batch, t)
		for i, v := range ids.Value().Data().([]int) {
			ids.Value().Data().([]int)[i] = (i*31 + v) % 512
			targets.Value().Data().([]int)[i] = (i*17 + 5) % 512
		}
		loss, _, err := m.Loss(g, Inputs{IDs: ids}, targets)
		if err != nil {
			b.Fatal(err)
		}
		grads, err := gorgonia.Grad(loss, g.Learnables()...)
		if err != nil {
			b.Fatal(err)
		}
		vals := make([]gorgonia.Value, len(grads))
		for i := range grads {
			gorgonia.Read(grads[i], &vals[i])
		}
		opt, err := train.NewAdamW(g.Params(), train.DefaultAdamWConfig())
		if err != nil {
			b.Fatal(err)
		}
		vm := gorgonia.NewTapeMachine(g.ExprGraph)
		defer vm.Close()
		step := func() {
			if err := vm.RunAll(); err != nil {
				b.Fatal(err)
			}
			vm.Reset()
			if err := opt.Step(vals, 1e-4); err != nil {
				b.Fatal(err)
			}
		}
		step() // warm-up: buffers are allocated once
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			step()
		}
		b.ReportMetric(float64(batch*t*b.N)/b.Elapsed().Seconds(), "tokens/s")
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/step")
	})
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

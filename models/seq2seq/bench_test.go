package seq2seq

import (
	"math/rand/v2"
	"testing"
	"time"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/train"
)

// BenchmarkTrainStep is a whole training step of the Small preset (7.6M
// parameters, vocabulary 8000) on a full batch of phrases: forward,
// backward of the label-smoothed loss and an Adam update, float32, dropout
// on as in training.
func BenchmarkTrainStep(b *testing.B) {
	b.Run("small_V8000_d256_h4_L3+3_ff1024_B64_Ts16_Tt16", func(b *testing.B) {
		const rows, ts, tt = 64, 16, 16
		m, err := New(Small(), layers.WithSeed(1))
		if err != nil {
			b.Fatal(err)
		}
		g := m.Store.NewGraph(layers.Training())
		f := m.NewFeed(g, rows, ts, tt)
		rng := rand.New(rand.NewPCG(1, 1))
		srcs, tgts := make([][]int, rows), make([][]int, rows)
		for r := range srcs {
			for range ts - 1 {
				srcs[r] = append(srcs[r], 4+rng.IntN(7990))
				tgts[r] = append(tgts[r], 4+rng.IntN(7990))
			}
		}
		batch, err := m.Config.NewBatch(srcs, tgts, rows, ts, tt)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Load(batch); err != nil {
			b.Fatal(err)
		}
		loss, _, err := m.Loss(g, f.Inputs, f.Labels, 0.1)
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
		opt, err := train.NewAdamW(g.Params(), train.AdamWConfig{Beta1: 0.9, Beta2: 0.98, Eps: 1e-9})
		if err != nil {
			b.Fatal(err)
		}
		vm, err := g.Machine(layers.SharedOutputs()) // the engine's machine
		if err != nil {
			b.Fatal(err)
		}
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
		step() // warm: buffers allocated
		b.ReportAllocs()
		b.ResetTimer()
		began := time.Now()
		for i := 0; i < b.N; i++ {
			step()
		}
		b.ReportMetric(float64(b.N*rows*(ts+tt))/time.Since(began).Seconds(), "tokens/s")
	})
}

// BenchmarkBeamSearch translates 16 random sources of 12 tokens with 4
// beams through the KV cache, a fixed 16 decoding steps (an untrained model
// rarely says eos), with the Small preset. The model keeps its compiled
// graphs between calls, so an untimed first call compiles them (PyTorch's
// benchmark warms up too); ms/first-call is that call's time.
func BenchmarkBeamSearch(b *testing.B) {
	b.Run("small_B16_Ts12_beam4_steps16", func(b *testing.B) {
		m, err := New(Small(), layers.WithSeed(1))
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(2, 2))
		srcs := make([][]int, 16)
		for r := range srcs {
			for range 12 {
				srcs[r] = append(srcs[r], 4+rng.IntN(7990))
			}
		}
		cfg := DecodeConfig{Beam: 4, LengthPenalty: 0.6, MaxLen: 16}
		began := time.Now()
		if _, err := m.BeamSearch(srcs, cfg); err != nil {
			b.Fatal(err)
		}
		first := time.Since(began)
		b.ReportAllocs()
		b.ResetTimer()
		began = time.Now()
		tokens := 0
		for i := 0; i < b.N; i++ {
			hyps, err := m.BeamSearch(srcs, cfg)
			if err != nil {
				b.Fatal(err)
			}
			for _, h := range hyps {
				tokens += len(h[0].Tokens)
			}
		}
		b.ReportMetric(float64(tokens)/time.Since(began).Seconds(), "tokens/s")
		b.ReportMetric(float64(b.N*len(srcs))/time.Since(began).Seconds(), "sentences/s")
		b.ReportMetric(float64(first.Microseconds())/1000, "ms/first-call")
	})
}

package gpt

import (
	"slices"
	"testing"
	"time"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/train"
)

// newTrainStepBF16 is newTrainStep with the graph's matrix products in
// bf16 (ops.UseBF16, as the engine does under --bf16).
func newTrainStepBF16(cfg Config, batch, t int) (*trainStep, error) {
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
	ops.UseBF16(g.ExprGraph)
	ts := &trainStep{vals: make([]gorgonia.Value, len(grads))}
	for i := range grads {
		gorgonia.Read(grads[i], &ts.vals[i])
	}
	if ts.opt, err = train.NewAdamW(g.Params(), train.DefaultAdamWConfig()); err != nil {
		return nil, err
	}
	if ts.vm, err = g.Machine(layers.SharedOutputs()); err != nil {
		return nil, err
	}
	return ts, nil
}

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
		f32, err := newTrainStep(benchConfig(), batch, t)
		if err != nil {
			b.Fatal(err)
		}
		defer f32.close()
		bf, err := newTrainStepBF16(benchConfig(), batch, t)
		if err != nil {
			b.Fatal(err)
		}
		defer bf.close()
		for _, ts := range []*trainStep{f32, bf} { // warm-up
			if err := ts.step(); err != nil {
				b.Fatal(err)
			}
		}
		var tf, tb time.Duration
		var ratios []float64
		minF, minB := time.Duration(1<<62), time.Duration(1<<62)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			var df, db time.Duration
			for j, ts := range []*trainStep{f32, bf} {
				if i%2 == 1 { // alternate which goes first
					ts = []*trainStep{bf, f32}[j]
				}
				start := time.Now()
				if err := ts.step(); err != nil {
					b.Fatal(err)
				}
				if ts == f32 {
					df = time.Since(start)
				} else {
					db = time.Since(start)
				}
			}
			tf, tb = tf+df, tb+db
			minF, minB = min(minF, df), min(minB, db)
			ratios = append(ratios, float64(df)/float64(db))
		}
		slices.Sort(ratios)
		b.ReportMetric(float64(tf.Milliseconds())/float64(b.N), "ms/step-f32")
		b.ReportMetric(float64(tb.Milliseconds())/float64(b.N), "ms/step-bf16")
		b.ReportMetric(float64(minF.Milliseconds()), "min-ms-f32")
		b.ReportMetric(float64(minB.Milliseconds()), "min-ms-bf16")
		b.ReportMetric(ratios[len(ratios)/2], "median-speedup")
	})
}

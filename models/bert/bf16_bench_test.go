package bert

import (
	"slices"
	"testing"
	"time"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/train"
)

// BenchmarkBERTMiniPretrainStepBF16_T128_B32 is
// BenchmarkBERTMiniPretrainStep_T128_B32's step (BERT-Mini, the MLM loss
// over all 4,096 positions through the 30,522-word head, NSP, backward
// and AdamW) in float32 and with bf16 products (ops.UseBF16, as the
// engine does under --bf16), on two models built alike, interleaved: each
// iteration runs one step of each, in alternating order, so that a shared
// machine's load falls on both alike. It reports each one's mean and
// least ms/step and the median of the iterations' ratios (f32 time / bf16
// time).
//
//	go test ./models/bert -run '^$' -bench 'PretrainStepBF16' -benchtime 6x
func BenchmarkBERTMiniPretrainStepBF16_T128_B32(b *testing.B) {
	f32, done32 := pretrainStep(b, false)
	defer done32()
	bf, doneBF := pretrainStep(b, true)
	defer doneBF()
	interleaveBF16(b, f32, bf)
}

// pretrainStep compiles benchPretrain's full-MLM step, with bf16 products
// when bf16 is set.
func pretrainStep(b *testing.B, bf16 bool) (step, done func()) {
	const batch, t = 32, 128
	cfg := benchMini()
	p, err := NewForPreTraining(cfg, layers.WithSeed(1))
	if err != nil {
		b.Fatal(err)
	}
	g := p.Store.NewGraph()
	bb := newBenchBatch(batch, t, cfg.VocabSize, 7)
	in, labels, next := bb.inputs(g, batch, t)
	out, err := p.Loss(g, in, labels, next)
	if err != nil {
		b.Fatal(err)
	}
	grads, err := gorgonia.Grad(out.Loss, g.Learnables()...)
	if err != nil {
		b.Fatal(err)
	}
	if bf16 {
		ops.UseBF16(g.ExprGraph)
	}
	vals := make([]gorgonia.Value, len(grads))
	for i := range grads {
		gorgonia.Read(grads[i], &vals[i])
	}
	opt, err := train.NewAdamW(g.Params(), train.DefaultAdamWConfig())
	if err != nil {
		b.Fatal(err)
	}
	vm, err := g.Machine(layers.SharedOutputs()) // the engine's machine
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		if err := vm.RunAll(); err != nil {
			b.Fatal(err)
		}
		vm.Reset()
		if err := opt.Step(vals, 1e-4); err != nil {
			b.Fatal(err)
		}
	}, func() { vm.Close() }
}

// interleaveBF16 times f32 and bf against each other: one warm-up step
// each, then b.N iterations of one step each, in alternating order.
func interleaveBF16(b *testing.B, f32, bf func()) {
	f32()
	bf()
	var tf, tb time.Duration
	var ratios []float64
	minF, minB := time.Duration(1<<62), time.Duration(1<<62)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		first, second := f32, bf
		if i%2 == 1 {
			first, second = bf, f32
		}
		t0 := time.Now()
		first()
		t1 := time.Now()
		second()
		d1, d2 := t1.Sub(t0), time.Since(t1)
		df, db := d1, d2
		if i%2 == 1 {
			df, db = d2, d1
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
}

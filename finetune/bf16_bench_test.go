package finetune

import (
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/graphtest"
	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/train"
)

// BenchmarkTrainStepBF16 is BenchmarkTrainStep's step of the Fashion-MNIST
// recipe (Fashion(), B128, forward, backward and AdamW) in float32 and
// with bf16 products (ops.UseBF16, as the engine does under --bf16), on
// two models built alike, interleaved: each iteration runs one step of
// each, in alternating order, so that a shared machine's load falls on
// both alike. It reports each one's mean and least ms/step and the median
// of the iterations' ratios (f32 time / bf16 time).
//
//	go test ./finetune -run '^$' -bench 'TrainStepBF16/vit-fashion/B128$' -benchtime 12x
func BenchmarkTrainStepBF16(b *testing.B) {
	const batch = 128
	b.Run("vit-fashion/B128", func(b *testing.B) {
		f32, done32 := vitTrainStep(b, batch, false)
		defer done32()
		bf, doneBF := vitTrainStep(b, batch, true)
		defer doneBF()
		graphtest.InterleaveBF16(b, f32, bf)
	})
}

// vitTrainStep compiles the recipe's training step on a (batch, 1, 28,
// 28) batch, with bf16 products when bf16 is set.
func vitTrainStep(b *testing.B, batch int, bf16 bool) (step, done func()) {
	c := benchClassifier(b)
	g := c.Store.NewGraph()
	px, labels := g.Input("pixel_values", batch, 1, 28, 28), g.IntInput("labels", batch)
	benchPixels(px, 1)
	for i := range labels.Value().Data().([]int) {
		labels.Value().Data().([]int)[i] = (i * 7) % 10
	}
	loss, _, err := c.Loss(g, px, labels, 0)
	if err != nil {
		b.Fatal(err)
	}
	grads, err := gorgonia.Grad(loss, g.Learnables()...)
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
	cfg := train.DefaultAdamWConfig()
	cfg.Decay = c.Decay
	opt, err := train.NewAdamW(g.Params(), cfg)
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

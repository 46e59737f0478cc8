package finetune

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/vit"
)

// The benchmarks run the ViT Fashion preset (28×28×1, 4×4 patches, 6
// layers, 128 wide, 10 classes), float32, dropout off, on synthetic
// N(0, 1) pixels and uniform labels: the training step of the
// Fashion-MNIST recipe (`zoo finetune vit`) without augmentation (forward,
// backward and AdamW), and inference. tools/bench.sh runs them against
// tools/pytorch/bench_vit.py.

// benchClassifier is the Fashion preset with a 10-class head, seeded.
func benchClassifier(b *testing.B) *vit.ForImageClassification {
	m, err := vit.New(vit.Fashion(), vit.StoreOption(layers.WithSeed(1)))
	if err != nil {
		b.Fatal(err)
	}
	c, err := vit.NewForImageClassification(m, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// benchPixels fills n with N(0, 1) values, seeded.
func benchPixels(n *gorgonia.Node, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 2))
	for i := range n.Value().Data().([]float32) {
		n.Value().Data().([]float32)[i] = float32(r.NormFloat64())
	}
}

// BenchmarkTrainStep is a whole training step of the Fashion preset:
// forward, backward of the cross-entropy and an AdamW update with the
// model's decay rule. The _bf16 rows have the graph's matrix products in
// bf16 (ops.UseBF16, as the engine under --bf16), against
// tools/pytorch/bench_vit.py --bf16 (torch.autocast) in tools/bench.sh bf16.
func BenchmarkTrainStep(b *testing.B) {
	for _, row := range []struct {
		batch int
		bf16  bool
	}{{64, false}, {128, false}, {64, true}, {128, true}} {
		batch, sfx := row.batch, map[bool]string{false: "", true: "_bf16"}[row.bf16]
		b.Run(fmt.Sprintf("vit-fashion/B%d%s", batch, sfx), func(b *testing.B) {
			step, done := vitTrainStep(b, batch, row.bf16)
			defer done()
			step() // warm-up: buffers are allocated once
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				step()
			}
			reportStep(b, batch, cpu0)
		})
	}
}

// reportStep reports images/s, wall ms/step and, where measured, the
// process's CPU ms/step (all threads) since cpu0, as
// tools/pytorch/bench_vit.py does: tools/bench_ratios.py compares both.
func reportStep(b *testing.B, batch int, cpu0 time.Duration) {
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "images/s")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/step")
	if cpu := cpuTime(); cpu > 0 {
		b.ReportMetric(float64((cpu-cpu0).Microseconds())/1e3/float64(b.N), "cpu-ms/step")
	}
}

// BenchmarkForward is inference: the logits of a batch, no gradients.
func BenchmarkForward(b *testing.B) {
	for _, batch := range []int{64, 256} {
		b.Run(fmt.Sprintf("vit-fashion/B%d", batch), func(b *testing.B) {
			c := benchClassifier(b)
			g := c.Store.NewGraph()
			px := g.Input("pixel_values", batch, 1, 28, 28)
			benchPixels(px, 1)
			if _, err := c.ClassLogits(g, px); err != nil {
				b.Fatal(err)
			}
			vm, err := g.Machine()
			if err != nil {
				b.Fatal(err)
			}
			defer vm.Close()
			run := func() {
				if err := vm.RunAll(); err != nil {
					b.Fatal(err)
				}
				vm.Reset()
			}
			run()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				run()
			}
			reportStep(b, batch, cpu0)
		})
	}
}

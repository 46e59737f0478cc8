package pretrain

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/vit"
	"github.com/d73a19ff/zoo/train"
)

// BenchmarkMAETrainStep times one MAE pretraining step of the MAEFashion
// preset (forward, backward, AdamW) at batches 64 and 128, Set (masking,
// gather indexes, targets) included, as in training; data loading is not.
//
//	go test -run '^$' -bench MAETrainStep -benchtime 10x ./pretrain/
func BenchmarkMAETrainStep(b *testing.B) {
	for _, batch := range []int{64, 128} {
		b.Run(fmt.Sprintf("mae-fashion/B%d", batch), func(b *testing.B) {
			m, err := vit.NewViTMAEForPreTraining(vit.MAEFashion(), vit.StoreOption(layers.WithSeed(1)))
			if err != nil {
				b.Fatal(err)
			}
			g := m.Store.NewGraph(layers.Training())
			mg, err := m.Graph(g, batch)
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			px := make([]float32, batch*28*28)
			for i := range px {
				px[i] = float32(r.NormFloat64())
			}
			grads, err := gorgonia.Grad(mg.Loss, g.Learnables()...)
			if err != nil {
				b.Fatal(err)
			}
			vals := make([]gorgonia.Value, len(grads))
			for i := range grads {
				gorgonia.Read(grads[i], &vals[i])
			}
			cfg := train.DefaultAdamWConfig()
			cfg.Decay = m.Decay
			opt, err := train.NewAdamW(g.Params(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			vm := gorgonia.NewTapeMachine(g.ExprGraph)
			defer vm.Close()
			step := func(i int) {
				if err := mg.Set(px, MaskNoise(1, 0, i, batch, 49)); err != nil {
					b.Fatal(err)
				}
				if err := vm.RunAll(); err != nil {
					b.Fatal(err)
				}
				vm.Reset()
				if err := opt.Step(vals, 1e-4); err != nil {
					b.Fatal(err)
				}
			}
			step(0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				step(i + 1)
			}
			b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "images/s")
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/step")
		})
	}
}

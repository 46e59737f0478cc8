package layers

import (
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/graphtest"
	"github.com/d73a19ff/zoo/internal/ops"
)

// BenchmarkEncoderStepBF16 is BenchmarkEncoderStep's BERT-like and
// ViT-like steps (forward + backward, no optimizer) in float32 and with
// bf16 products (ops.UseBF16), interleaved a step of each per iteration
// in alternating order (graphtest.InterleaveBF16), reporting each one's
// mean and least ms and the median of the paired ratios (f32 time / bf16
// time).
//
//	go test ./layers -run '^$' -bench EncoderStepBF16 -benchtime 12x
func BenchmarkEncoderStepBF16(b *testing.B) {
	b.Run("bert_like_V1024_T128_d256_h4_L4_ff1024_B16", func(b *testing.B) {
		const batch, t, v, d = 16, 128, 1024, 256
		benchLossBF16(b, func(s *Store, g *Graph) (*gorgonia.Node, error) { return bertLike(s, g, batch, t, v, d) })
	})
	b.Run("vit_like_28x28x1_p4_d128_h4_L6_ff256_B64", func(b *testing.B) {
		const batch = 64
		benchLossBF16(b, func(s *Store, g *Graph) (*gorgonia.Node, error) { return vitLike(s, g, batch) })
	})
}

func benchLossBF16(bn *testing.B, build func(s *Store, g *Graph) (*gorgonia.Node, error)) {
	var ms [2]gorgonia.VM
	for i := range ms {
		s, err := NewStore(WithSeed(1), WithInitStd(0.02))
		if err != nil {
			bn.Fatal(err)
		}
		g := s.NewGraph(Training())
		loss, err := build(s, g)
		if err != nil {
			bn.Fatal(err)
		}
		if _, err := gorgonia.Grad(loss, g.Learnables()...); err != nil {
			bn.Fatal(err)
		}
		if i == 1 {
			ops.UseBF16(g.ExprGraph)
		}
		ms[i] = gorgonia.NewTapeMachine(g.ExprGraph)
		defer ms[i].Close()
	}
	step := func(m gorgonia.VM) func() {
		return func() {
			if err := m.RunAll(); err != nil {
				bn.Fatal(err)
			}
			m.Reset()
		}
	}
	graphtest.InterleaveBF16(bn, step(ms[0]), step(ms[1]))
}

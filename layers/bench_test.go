package layers

import (
	"fmt"
	"testing"

	"gorgonia.org/gorgonia"
)

// benchTrainStep times forward + backward of Σ y ⊙ r for a layer built by
// build on a float32 training graph of batch b and length t, and reports
// tokens per second.
func benchTrainStep(bn *testing.B, b, t, d int, build func(s *Store, g *Graph, x, mask *gorgonia.Node) (*gorgonia.Node, error)) {
	s, err := NewStore(WithSeed(1))
	if err != nil {
		bn.Fatal(err)
	}
	g := s.NewGraph(Training())
	x := randInput32(g, "x", b, t, d)
	mask := make([]float64, b*t)
	for i := range mask {
		if i%t < t-i/t%8 { // up to 7 padded keys per row
			mask[i] = 1
		}
	}
	mn, err := g.Constant("mask", mask, b, t)
	if err != nil {
		bn.Fatal(err)
	}
	y, err := build(s, g, x, mn)
	if err != nil {
		bn.Fatal(err)
	}
	r := randInput32(g, "r", b, t, d)
	prod, err := gorgonia.HadamardProd(y, r)
	if err != nil {
		bn.Fatal(err)
	}
	loss, err := gorgonia.Sum(prod)
	if err != nil {
		bn.Fatal(err)
	}
	if _, err := gorgonia.Grad(loss, append(g.Learnables(), x)...); err != nil {
		bn.Fatal(err)
	}
	m := gorgonia.NewTapeMachine(g.ExprGraph)
	defer m.Close()
	if err := m.RunAll(); err != nil { // warm-up: buffers are allocated once
		bn.Fatal(err)
	}
	m.Reset()
	bn.ReportAllocs()
	bn.ResetTimer()
	for i := 0; i < bn.N; i++ {
		if err := m.RunAll(); err != nil {
			bn.Fatal(err)
		}
		m.Reset()
	}
	bn.ReportMetric(float64(b*t*bn.N)/bn.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkMHA is multi-head self-attention with a key-padding mask,
// forward and backward.
func BenchmarkMHA(b *testing.B) {
	const batch, t, d, h = 16, 128, 256, 4
	b.Run(fmt.Sprintf("B%d_T%d_d%d_h%d", batch, t, d, h), func(b *testing.B) {
		benchTrainStep(b, batch, t, d, func(s *Store, g *Graph, x, mask *gorgonia.Node) (*gorgonia.Node, error) {
			a, err := NewMultiHeadAttention(s.Root(), AttentionConfig{Dim: d, Heads: h, Bias: true})
			if err != nil {
				return nil, err
			}
			return a.Forward(g, x, nil, mask, false)
		})
	})
}

// BenchmarkEncoderBlock is a pre-norm GELU encoder block, forward and
// backward, dropout off.
func BenchmarkEncoderBlock(b *testing.B) {
	const batch, t, d, h, ff = 16, 128, 256, 4, 1024
	b.Run(fmt.Sprintf("B%d_T%d_d%d_h%d_ff%d", batch, t, d, h, ff), func(b *testing.B) {
		benchTrainStep(b, batch, t, d, func(s *Store, g *Graph, x, mask *gorgonia.Node) (*gorgonia.Node, error) {
			e, err := NewEncoderBlock(s.Root(), BlockConfig{Dim: d, Heads: h, FFNDim: ff, Activation: "gelu", Norm: PreNorm, LayerNormEps: 1e-5, Bias: true})
			if err != nil {
				return nil, err
			}
			return e.Forward(g, x, mask)
		})
	})
}

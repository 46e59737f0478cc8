package layers

import (
	"fmt"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/peakrss"
)

// benchTrainStep times forward + backward of Σ y ⊙ r for a layer built by
// build on a float32 training graph of batch b and length t, with a
// key-padding mask, and reports tokens per second.
func benchTrainStep(bn *testing.B, b, t, d int, build func(s *Store, g *Graph, x, mask *gorgonia.Node) (*gorgonia.Node, error)) {
	g, err := trainGraph(b, t, d, true, build)
	if err != nil {
		bn.Fatal(err)
	}
	runSteps(bn, g)
	bn.ReportMetric(float64(b*t*bn.N)/bn.Elapsed().Seconds(), "tokens/s")
}

// trainGraph builds forward and backward (with respect to the learnables
// and x) of Σ y ⊙ r, where y = build(x, mask) for an input x (b, t, d), a
// fixed r of y's shape and, when padded, a key-padding mask (b, t) with up
// to 7 padded keys per row; mask is nil otherwise.
func trainGraph(b, t, d int, padded bool, build func(s *Store, g *Graph, x, mask *gorgonia.Node) (*gorgonia.Node, error)) (*Graph, error) {
	s, err := NewStore(WithSeed(1))
	if err != nil {
		return nil, err
	}
	g := s.NewGraph(Training())
	x := randInput32(g, "x", b, t, d)
	var mn *gorgonia.Node
	if padded {
		mask := make([]float64, b*t)
		for i := range mask {
			if i%t < t-i/t%8 { // up to 7 padded keys per row
				mask[i] = 1
			}
		}
		if mn, err = g.Constant("mask", mask, b, t); err != nil {
			return nil, err
		}
	}
	y, err := build(s, g, x, mn)
	if err != nil {
		return nil, err
	}
	r := randInput32(g, "r", y.Shape()...)
	prod, err := gorgonia.HadamardProd(y, r)
	if err != nil {
		return nil, err
	}
	loss, err := gorgonia.Sum(prod)
	if err != nil {
		return nil, err
	}
	if _, err := gorgonia.Grad(loss, append(g.Learnables(), x)...); err != nil {
		return nil, err
	}
	return g, nil
}

// runSteps runs the graph once to allocate its buffers, then bn.N times
// under the timer.
func runSteps(bn *testing.B, g *Graph) {
	m := gorgonia.NewTapeMachine(g.ExprGraph)
	defer m.Close()
	if err := m.RunAll(); err != nil {
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

// BenchmarkAttentionLong is causal multi-head self-attention (no padding),
// forward and backward of Σ y ⊙ r, at batch 2 and lengths 128 to 2048: the
// (B·h, T, T) scores make time and memory grow as T². Each row reports
// ms/op and the process's peak RSS (peakRSS_MB), which is the row's own
// only when the row runs alone in its process, as tools/bench.sh long runs
// it:
//
//	go test -c -o /tmp/layers.test ./layers
//	/tmp/layers.test -test.run '^$' -test.bench 'AttentionLong/^B2_T1024_d256_h4$' -test.benchtime 3x
//
// tools/pytorch/bench_long.py has the same rows.
func BenchmarkAttentionLong(b *testing.B) {
	const batch, d, h = 2, 256, 4
	for _, t := range longLengths {
		// The graph is built, and run once, by the row's first call and
		// reused by the second: testing calls a benchmark with N = 1 before
		// the timed N, and building twice would count two graphs in the peak.
		var m gorgonia.VM
		b.Run(fmt.Sprintf("B%d_T%d_d%d_h%d", batch, t, d, h), func(b *testing.B) {
			if m == nil {
				g, err := trainGraph(batch, t, d, false, func(s *Store, g *Graph, x, _ *gorgonia.Node) (*gorgonia.Node, error) {
					a, err := NewMultiHeadAttention(s.Root(), AttentionConfig{Dim: d, Heads: h, Bias: true})
					if err != nil {
						return nil, err
					}
					return a.Forward(g, x, nil, nil, true)
				})
				if err != nil {
					b.Fatal(err)
				}
				m = gorgonia.NewTapeMachine(g.ExprGraph)
				if err := m.RunAll(); err != nil {
					b.Fatal(err)
				}
				m.Reset()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := m.RunAll(); err != nil {
					b.Fatal(err)
				}
				m.Reset()
			}
			reportLong(b, batch*t)
		})
		if m != nil {
			m.Close()
		}
	}
}

// longLengths are the sequence lengths of the long-sequence sweep
// (BenchmarkAttentionLong, models/gpt's BenchmarkTrainStepLong).
var longLengths = []int{128, 256, 512, 1024, 2048}

// reportLong reports a long-sequence row's ms/op, tokens/s and the process's
// peak RSS in MB.
func reportLong(b *testing.B, tokens int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N), "ms/op")
	b.ReportMetric(float64(tokens*b.N)/b.Elapsed().Seconds(), "tokens/s")
	if mb, ok := peakrss.MB(); ok {
		b.ReportMetric(mb, "peakRSS_MB")
	}
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

// BenchmarkEncoderStep is a whole encoder training step (forward + backward of
// the loss) at the BERT-like and ViT-like shapes of the performance issue,
// built from the shared layers; tools/pytorch/bench_layers.py has the same
// models.
func BenchmarkEncoderStep(b *testing.B) {
	b.Run("bert_like_V1024_T128_d256_h4_L4_ff1024_B16", func(b *testing.B) {
		const batch, t, v, d = 16, 128, 1024, 256
		benchLoss(b, batch*t, func(s *Store, g *Graph) (*gorgonia.Node, error) { return bertLike(s, g, batch, t, v, d) })
	})
	b.Run("vit_like_28x28x1_p4_d128_h4_L6_ff256_B64", func(b *testing.B) {
		const batch = 64
		benchLoss(b, batch, func(s *Store, g *Graph) (*gorgonia.Node, error) { return vitLike(s, g, batch) })
	})
}

// bertLike: word + position embeddings, LayerNorm, a post-norm GELU encoder
// and a masked-LM head (dense, GELU, LayerNorm, tied decoder) with 15% of
// the positions labelled.
func bertLike(s *Store, g *Graph, batch, t, v, d int) (*gorgonia.Node, error) {
	words, err := NewEmbedding(s.Root().Sub("word_embeddings"), v, d)
	if err != nil {
		return nil, err
	}
	pos, err := NewLearnedPositional(s.Root().Sub("position_embeddings"), 512, d)
	if err != nil {
		return nil, err
	}
	ln, err := NewLayerNorm(s.Root().Sub("embeddings_norm"), d, 1e-12, true)
	if err != nil {
		return nil, err
	}
	enc, err := NewEncoder(s.Root().Sub("encoder"), BlockConfig{Dim: d, Heads: 4, FFNDim: 1024, Activation: "gelu",
		Norm: PostNorm, LayerNormEps: 1e-12, Bias: true}, 4)
	if err != nil {
		return nil, err
	}
	dense, err := NewLinear(s.Root().Sub("mlm_dense"), d, d, true)
	if err != nil {
		return nil, err
	}
	mlmNorm, err := NewLayerNorm(s.Root().Sub("mlm_norm"), d, 1e-12, true)
	if err != nil {
		return nil, err
	}
	ids, labels := g.IntInput("input_ids", batch, t), g.IntInput("labels", batch, t)
	lab := labels.Value().Data().([]int)
	for i := range ids.Value().Data().([]int) {
		ids.Value().Data().([]int)[i] = (i * 31) % v
		lab[i] = IgnoreIndex
		if i%7 == 0 {
			lab[i] = (i * 13) % v
		}
	}
	h, err := words.Forward(g, ids)
	for _, f := range []func(*gorgonia.Node) (*gorgonia.Node, error){
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return pos.Forward(g, x) },
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return ln.Forward(g, x) },
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return enc.Forward(g, x, nil) },
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return dense.Forward(g, x) },
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return Activate(x, GELU) },
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return mlmNorm.Forward(g, x) },
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return words.Logits(g, x) },
	} {
		if err != nil {
			return nil, err
		}
		h, err = f(h)
	}
	if err != nil {
		return nil, err
	}
	return CrossEntropy(h, labels, IgnoreIndex, 0)
}

// vitLike: 4×4 patches of 28×28 grey images, a class token, learned
// positions, a pre-norm GELU encoder with a final norm, and a 10-way head on
// the class token.
func vitLike(s *Store, g *Graph, batch int) (*gorgonia.Node, error) {
	const d = 128
	patches, err := NewPatchEmbedding(s.Root().Sub("patch_embeddings"), 1, 4, d)
	if err != nil {
		return nil, err
	}
	cls, err := NewClassToken(s.Root(), d)
	if err != nil {
		return nil, err
	}
	pos, err := NewLearnedPositional(s.Root().Sub("position_embeddings"), 50, d)
	if err != nil {
		return nil, err
	}
	enc, err := NewEncoder(s.Root().Sub("encoder"), BlockConfig{Dim: d, Heads: 4, FFNDim: 256, Activation: "gelu",
		Norm: PreNorm, LayerNormEps: 1e-12, Bias: true}, 6)
	if err != nil {
		return nil, err
	}
	head, err := NewLinear(s.Root().Sub("classifier"), d, 10, true)
	if err != nil {
		return nil, err
	}
	img := randInput32(g, "pixel_values", batch, 1, 28, 28)
	labels, first := g.IntInput("labels", batch), g.IntInput("cls_index", batch)
	for i := range labels.Value().Data().([]int) {
		labels.Value().Data().([]int)[i] = i % 10
	}
	h, err := patches.Forward(g, img)
	for _, f := range []func(*gorgonia.Node) (*gorgonia.Node, error){
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return cls.Forward(g, x) },
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return pos.Forward(g, x) },
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return enc.Forward(g, x, nil) },
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return SelectTokens(x, first) },
		func(x *gorgonia.Node) (*gorgonia.Node, error) { return head.Forward(g, x) },
	} {
		if err != nil {
			return nil, err
		}
		h, err = f(h)
	}
	if err != nil {
		return nil, err
	}
	return CrossEntropy(h, labels, IgnoreIndex, 0)
}

// benchLoss times forward + backward of a scalar loss on a float32 training
// graph (dropout off), after one warm-up run, reporting items/s.
func benchLoss(bn *testing.B, items int, build func(s *Store, g *Graph) (*gorgonia.Node, error)) {
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
	runSteps(bn, g)
	bn.ReportMetric(float64(bn.Elapsed().Milliseconds())/float64(bn.N), "ms/step")
	bn.ReportMetric(float64(items*bn.N)/bn.Elapsed().Seconds(), "items/s")
}

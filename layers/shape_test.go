package layers

import (
	"fmt"
	"testing"

	"github.com/d73a19ff/zoo/internal/graphtest"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Every layer's output shape, in float32 and float64, including
// cross-attention with Tq ≠ Tk. The graphs also run, so a kernel that
// disagrees with its InferShape would fail here.
func TestShapes(t *testing.T) {
	const b, tq, tk, d, h = 2, 3, 5, 8, 2
	blk := BlockConfig{Dim: d, Heads: h, FFNDim: 16, Activation: "gelu", Norm: PreNorm, LayerNormEps: 1e-5, Bias: true}
	cases := []struct {
		name  string
		want  []int
		build func(s *Store, g *Graph) (*gorgonia.Node, error)
	}{
		{"linear", []int{b, tq, 5}, func(s *Store, g *Graph) (*gorgonia.Node, error) {
			l, err := NewLinear(s.Root(), d, 5, true)
			if err != nil {
				return nil, err
			}
			return l.Forward(g, g.Input("x", b, tq, d))
		}},
		{"embedding", []int{b, tq, d}, func(s *Store, g *Graph) (*gorgonia.Node, error) {
			e, err := NewEmbedding(s.Root(), 11, d)
			if err != nil {
				return nil, err
			}
			return e.Forward(g, g.IntInput("ids", b, tq))
		}},
		{"token_type_embedding", []int{b, tq, d}, func(s *Store, g *Graph) (*gorgonia.Node, error) {
			e, err := NewEmbedding(s.Root().Sub("token_type_embeddings"), 2, d)
			if err != nil {
				return nil, err
			}
			return e.Forward(g, g.IntInput("token_type_ids", b, tq))
		}},
		{"learned_positions", []int{b, tq, d}, func(s *Store, g *Graph) (*gorgonia.Node, error) {
			p, err := NewLearnedPositional(s.Root(), 16, d)
			if err != nil {
				return nil, err
			}
			return p.Forward(g, g.Input("x", b, tq, d))
		}},
		{"sinusoidal", []int{b, tq, d}, func(s *Store, g *Graph) (*gorgonia.Node, error) {
			p, err := NewSinusoidal(d, 10000)
			if err != nil {
				return nil, err
			}
			return p.Forward(g, g.Input("x", b, tq, d))
		}},
		{"layernorm", []int{b, tq, d}, func(s *Store, g *Graph) (*gorgonia.Node, error) {
			n, err := NewLayerNorm(s.Root(), d, 1e-5, false)
			if err != nil {
				return nil, err
			}
			return n.Forward(g, g.Input("x", b, tq, d))
		}},
		{"self_attention", []int{b, tq, d}, func(s *Store, g *Graph) (*gorgonia.Node, error) {
			a, err := NewMultiHeadAttention(s.Root(), AttentionConfig{Dim: d, Heads: h})
			if err != nil {
				return nil, err
			}
			return a.Forward(g, g.Input("x", b, tq, d), nil, onesMask(g, b, tq), true)
		}},
		{"cross_attention_Tq3_Tk5", []int{b, tq, d}, func(s *Store, g *Graph) (*gorgonia.Node, error) {
			a, err := NewMultiHeadAttention(s.Root(), AttentionConfig{Dim: d, Heads: h, Bias: true})
			if err != nil {
				return nil, err
			}
			return a.Forward(g, g.Input("x", b, tq, d), g.Input("mem", b, tk, d), onesMask(g, b, tk), false)
		}},
		{"attention_probs", []int{b * h, tq, tk}, func(s *Store, g *Graph) (*gorgonia.Node, error) {
			a, err := NewMultiHeadAttention(s.Root(), AttentionConfig{Dim: d, Heads: h})
			if err != nil {
				return nil, err
			}
			_, p, err := a.ForwardWithProbs(g, g.Input("x", b, tq, d), g.Input("mem", b, tk, d), nil, true)
			return p, err
		}},
		{"feed_forward", []int{b, tq, d}, func(s *Store, g *Graph) (*gorgonia.Node, error) {
			f, err := NewFeedForward(s.Root(), FeedForwardConfig{Dim: d, Hidden: 32, Activation: "relu"})
			if err != nil {
				return nil, err
			}
			return f.Forward(g, g.Input("x", b, tq, d))
		}},
		{"encoder", []int{b, tq, d}, func(s *Store, g *Graph) (*gorgonia.Node, error) {
			e, err := NewEncoder(s.Root(), blk, 2)
			if err != nil {
				return nil, err
			}
			return e.Forward(g, g.Input("x", b, tq, d), onesMask(g, b, tq))
		}},
		{"decoder", []int{b, tq, d}, func(s *Store, g *Graph) (*gorgonia.Node, error) {
			dec, err := NewDecoder(s.Root(), blk, 2)
			if err != nil {
				return nil, err
			}
			return dec.Forward(g, g.Input("x", b, tq, d), nil, g.Input("mem", b, tk, d), onesMask(g, b, tk))
		}},
		{"patch_embedding", []int{b, 6, d}, func(s *Store, g *Graph) (*gorgonia.Node, error) {
			p, err := NewPatchEmbedding(s.Root(), 3, 4, d)
			if err != nil {
				return nil, err
			}
			return p.Forward(g, g.Input("img", b, 3, 8, 12))
		}},
		{"cross_entropy", []int{}, func(s *Store, g *Graph) (*gorgonia.Node, error) {
			return CrossEntropy(g.Input("logits", b, tq, 7), g.IntInput("targets", b, tq), IgnoreIndex, 0.1)
		}},
	}
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%v", c.name, dt), func(t *testing.T) {
				s, err := NewStore(WithDtype(dt))
				require.NoError(t, err)
				g := s.NewGraph()
				y, err := c.build(s, g)
				require.NoError(t, err)
				require.Equal(t, c.want, []int(y.Shape()))
				v := graphtest.Run(t, g.ExprGraph, y)[0]
				require.Equal(t, c.want, []int(v.Shape()), "run-time shape")
				require.Equal(t, dt, v.Dtype())
			})
		}
	}
}

func onesMask(g *Graph, b, t int) *gorgonia.Node { return keyMask(g, b, t) }

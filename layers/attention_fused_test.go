package layers

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// fusedAttentions counts the fused attention ops in g.
func fusedAttentions(g *Graph) int {
	n := 0
	for _, node := range g.AllNodes() {
		if op := node.Op(); op != nil && strings.HasPrefix(op.String(), "FlashAttention(") {
			n++
		}
	}
	return n
}

// Attention runs fused when nothing reads the probabilities and attention
// dropout is off on the graph (probability 0, or an evaluation graph), and
// unfused otherwise.
func TestAttentionFusedWhenProbsUnused(t *testing.T) {
	const b, tl, d = 2, 5, 8
	s := newStore64(t)
	drop, err := NewMultiHeadAttention(s.Root().Sub("drop"), AttentionConfig{Dim: d, Heads: 2, Dropout: 0.1})
	require.NoError(t, err)
	plain, err := NewMultiHeadAttention(s.Root().Sub("plain"), AttentionConfig{Dim: d, Heads: 2})
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		a     *MultiHeadAttention
		opts  []GraphOption
		probs bool
		fused int
	}{
		{"dropout, evaluation", drop, nil, false, 1},
		{"dropout, training", drop, []GraphOption{Training()}, false, 0},
		{"no dropout, training", plain, []GraphOption{Training()}, false, 1},
		{"probabilities, evaluation", plain, nil, true, 0},
	} {
		g := s.NewGraph(c.opts...)
		x := randInput(g, "x", 1, b, tl, d)
		if c.probs {
			_, _, err = c.a.ForwardWithProbs(g, x, nil, nil, true)
		} else {
			_, err = c.a.Forward(g, x, nil, nil, true)
		}
		require.NoError(t, err)
		require.Equal(t, c.fused, fusedAttentions(g), c.name)
	}

	cfg := BlockConfig{Dim: d, Heads: 2, FFNDim: 16, Activation: "gelu", Norm: PreNorm, LayerNormEps: 1e-5, Bias: true, Causal: true}
	dec, err := NewDecoder(s.Root().Sub("decoder"), cfg, 2)
	require.NoError(t, err)
	g := s.NewGraph()
	x, mem := randInput(g, "x", 2, b, tl, d), randInput(g, "mem", 3, b, 3, d)
	_, err = dec.Forward(g, x, nil, mem, nil)
	require.NoError(t, err)
	require.Equal(t, 4, fusedAttentions(g), "decoder: self- and cross-attention fused")
	g = s.NewGraph()
	x, mem = randInput(g, "x", 2, b, tl, d), randInput(g, "mem", 3, b, 3, d)
	_, _, err = dec.ForwardWithProbs(g, x, nil, mem, nil)
	require.NoError(t, err)
	require.Equal(t, 2, fusedAttentions(g), "decoder with cross-attention maps: self-attention fused only")

	g = s.NewGraph()
	c := &KVCache{K: g.Input("k", plain.CacheShape(b, 7)...), V: g.Input("v", plain.CacheShape(b, 7)...), Slot: g.IntInput("slot", 1)}
	_, err = plain.ForwardCached(g, randInput(g, "x", 4, b, 1, d), g.Input("occupied", b, 7), c)
	require.NoError(t, err)
	require.Equal(t, 1, fusedAttentions(g), "cached step")
}

// The fused Forward equals ForwardWithProbs, which runs unfused, in value
// and in the gradients of every parameter and of the inputs, for causal
// self-attention with padding and for cross-attention, in a training graph
// without attention dropout.
func TestAttentionFusedMatchesUnfused(t *testing.T) {
	const b, tq, tk, d = 2, 5, 7, 8
	for _, c := range []struct {
		name   string
		cross  bool
		causal bool
		fused  bool // FusedQKV
	}{
		{name: "self causal fused QKV", causal: true, fused: true},
		{name: "self bidirectional"},
		{name: "cross", cross: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore64(t)
			a, err := NewMultiHeadAttention(s.Root(), AttentionConfig{Dim: d, Heads: 2, Bias: true, FusedQKV: c.fused})
			require.NoError(t, err)
			run := func(withProbs bool) [][]float64 {
				g := s.NewGraph(Training())
				x := randInput(g, "x", 5, b, tq, d)
				inputs := []*gorgonia.Node{x}
				var kv *gorgonia.Node
				klen := tq
				if c.cross {
					kv, klen = randInput(g, "kv", 6, b, tk, d), tk
					inputs = append(inputs, kv)
				}
				keep := make([]float64, b*klen)
				for i := range keep {
					keep[i] = 1
				}
				keep[2*klen-1], keep[2*klen-2] = 0, 0 // batch row 1: two padding keys
				mask, err := g.Constant("mask", keep, b, klen)
				require.NoError(t, err)
				var y *gorgonia.Node
				if withProbs {
					y, _, err = a.ForwardWithProbs(g, x, kv, mask, c.causal)
				} else {
					y, err = a.Forward(g, x, kv, mask, c.causal)
				}
				require.NoError(t, err)
				require.Equal(t, !withProbs, fusedAttentions(g) == 1)
				w := randInput(g, "w", 7, b, tq, d)
				loss := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, w))))
				grads, err := gorgonia.Grad(loss, append(g.Learnables(), inputs...)...)
				require.NoError(t, err)
				vals := runRead(t, g, append([]*gorgonia.Node{y}, grads...)...)
				out := make([][]float64, len(vals))
				for i, v := range vals {
					out[i] = v.(*tensor.Dense).Data().([]float64)
				}
				return out
			}
			want, got := run(true), run(false)
			require.Len(t, got, len(want))
			for i := range want {
				require.InDeltaSlice(t, want[i], got[i], 1e-12, "output or gradient %d", i)
			}
		})
	}
}

package layers

import (
	"math"
	"testing"

	"github.com/d73a19ff/zoo/internal/graphtest"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestScopeNames(t *testing.T) {
	s, err := NewStore()
	require.NoError(t, err)
	sc := s.Root().Sub("encoder").Sub("layer").Index(0).Sub("attention").Sub("self")
	_, err = NewLinear(sc.Sub("query"), 4, 4, true)
	require.NoError(t, err)
	_, err = NewLayerNorm(s.Root().Sub("ln_f"), 4, 1e-5, true)
	require.NoError(t, err)
	var names []string
	for _, p := range s.Params() {
		names = append(names, p.Name)
	}
	require.Equal(t, []string{
		"encoder.layer.0.attention.self.query.weight",
		"encoder.layer.0.attention.self.query.bias",
		"ln_f.weight", "ln_f.bias",
	}, names, "names are checkpoint keys, listed in creation order")
	p, ok := s.Param("ln_f.bias")
	require.True(t, ok)
	require.Equal(t, []int{4}, []int(p.Value.Shape()))
}

func TestScopeRejectsBadNames(t *testing.T) {
	s, err := NewStore()
	require.NoError(t, err)
	_, err = NewLinear(s.Root().Sub("fc"), 2, 3, true)
	require.NoError(t, err)
	_, err = NewLinear(s.Root().Sub("fc"), 2, 3, true)
	require.ErrorContains(t, err, `"fc.weight" is defined twice`)
	_, err = s.Root().Param("a.b", []int{1}, Constant(0))
	require.ErrorContains(t, err, "no dots")
	_, err = s.Root().Param("z", []int{0, 2}, Constant(0))
	require.ErrorContains(t, err, "must be positive")
	_, err = Scope{}.Param("w", []int{1}, Constant(0))
	require.ErrorContains(t, err, "no store")
	_, err = NewStore(WithDtype(tensor.Int))
	require.ErrorContains(t, err, "not supported")
}

func TestSeededInitIsReproducible(t *testing.T) {
	build := func(seed uint64, opts ...Option) []float32 {
		s, err := NewStore(append(opts, WithSeed(seed))...)
		require.NoError(t, err)
		l, err := NewLinear(s.Root(), 8, 8, true)
		require.NoError(t, err)
		return l.Weight.Value.Data().([]float32)
	}
	require.Equal(t, build(1), build(1))
	require.NotEqual(t, build(1), build(2))
	w := build(3, WithInitStd(0.02))
	var ss float64
	for _, v := range w {
		ss += float64(v * v)
	}
	require.InDelta(t, 0.02, math.Sqrt(ss/float64(len(w))), 0.008, "N(0, 0.02²) init")
}

// The same parameter tensors are bound, without copying, into graphs of
// different fixed shapes; an update to the store is seen by every graph.
func TestParamsSharedAcrossGraphs(t *testing.T) {
	s, err := NewStore(WithDtype(tensor.Float64))
	require.NoError(t, err)
	l, err := NewLinear(s.Root(), 3, 2, true)
	require.NoError(t, err)
	run := func(batch int) *tensor.Dense {
		g := s.NewGraph()
		x := g.Input("x", batch, 3)
		ones := make([]float64, batch*3)
		for i := range ones {
			ones[i] = 1
		}
		require.NoError(t, gorgonia.Let(x, tensor.New(tensor.WithShape(batch, 3), tensor.WithBacking(ones))))
		y, err := l.Forward(g, x)
		require.NoError(t, err)
		require.Same(t, l.Weight.Value, g.Node(l.Weight).Value(), "bound by reference")
		v := graphtest.Run(t, g.ExprGraph, y)[0]
		return v.(*tensor.Dense)
	}
	a := run(4)
	l.Weight.Value.Data().([]float64)[0] += 1 // an optimizer step
	b := run(1)
	require.InDelta(t, a.Data().([]float64)[0]+1, b.Data().([]float64)[0], 1e-12)
}

// Closed forms: Linear in·out + out; LayerNorm 2d; attention 4d² + 4d;
// feed-forward 2·d·f + f + d; an encoder block is attention + FFN + 2 norms
// and a decoder block adds a cross-attention and a third norm.
func TestParamCounts(t *testing.T) {
	const d, f, h = 16, 64, 4
	count := func(build func(Scope) error) int {
		s, err := NewStore()
		require.NoError(t, err)
		require.NoError(t, build(s.Root()))
		return s.NumParams()
	}
	c := BlockConfig{Dim: d, Heads: h, FFNDim: f, Activation: "gelu", Norm: PreNorm, LayerNormEps: 1e-5, Bias: true}
	attn, ffn, ln := 4*d*d+4*d, 2*d*f+f+d, 2*d
	require.Equal(t, 5*7+7, count(func(s Scope) error { _, err := NewLinear(s, 5, 7, true); return err }))
	require.Equal(t, 35, count(func(s Scope) error { _, err := NewLinear(s, 5, 7, false); return err }))
	require.Equal(t, ln, count(func(s Scope) error { _, err := NewLayerNorm(s, d, 1e-5, true); return err }))
	require.Equal(t, attn, count(func(s Scope) error {
		_, err := NewMultiHeadAttention(s, AttentionConfig{Dim: d, Heads: h, Bias: true})
		return err
	}))
	require.Equal(t, 4*d*d, count(func(s Scope) error {
		_, err := NewMultiHeadAttention(s, AttentionConfig{Dim: d, Heads: h})
		return err
	}))
	require.Equal(t, attn+ffn+2*ln, count(func(s Scope) error { _, err := NewEncoderBlock(s, c); return err }))
	require.Equal(t, 2*attn+ffn+3*ln, count(func(s Scope) error { _, err := NewDecoderBlock(s, c); return err }))
	require.Equal(t, 3*(attn+ffn+2*ln)+ln, count(func(s Scope) error { _, err := NewEncoder(s, c, 3); return err }), "pre-norm stack has a final norm")
	c.Norm = PostNorm
	require.Equal(t, 3*(attn+ffn+2*ln), count(func(s Scope) error { _, err := NewEncoder(s, c, 3); return err }))
	require.Equal(t, 16*3*4*4+16, count(func(s Scope) error { _, err := NewPatchEmbedding(s, 3, 4, 16); return err }))
}

// Two inputs given the same name stay two nodes (Gorgonia would merge them).
func TestInputNamesAreUnique(t *testing.T) {
	s, err := NewStore()
	require.NoError(t, err)
	g := s.NewGraph()
	a, b := g.Input("k", 2, 3), g.Input("k", 2, 3)
	require.NotSame(t, a, b)
	require.Equal(t, "k", a.Name())
	require.Equal(t, "k#1", b.Name())
}

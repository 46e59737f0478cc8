package layers

import (
	"math"
	"testing"

	"github.com/d73a19ff/zoo/internal/graphtest"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Every learnable of an encoder block and of a decoder block gets a nonzero
// gradient, in a float32 training graph with dropout on.
func TestEveryLearnableGetsAGradient(t *testing.T) {
	for _, c := range []struct {
		name    string
		decoder bool
		norm    Norm
	}{{"encoder_pre", false, PreNorm}, {"encoder_post", false, PostNorm}, {"decoder_pre", true, PreNorm}, {"decoder_post", true, PostNorm}} {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewStore(WithSeed(1))
			require.NoError(t, err)
			cfg := BlockConfig{Dim: 8, Heads: 2, FFNDim: 16, Activation: "gelu", Norm: c.norm, LayerNormEps: 1e-5,
				Dropout: 0.1, AttentionDropout: 0.1, ActivationDropout: 0.1, Bias: true}
			g := s.NewGraph(Training(), DropoutSeed(1))
			x := randInput32(g, "x", 2, 4, 8)
			mask := keyMask(g, 2, 4, [2]int{1, 3})
			var y *gorgonia.Node
			if c.decoder {
				b, err := NewDecoderBlock(s.Root(), cfg)
				require.NoError(t, err)
				y, err = b.Forward(g, x, mask, randInput32(g, "mem", 2, 3, 8), nil)
				require.NoError(t, err)
			} else {
				b, err := NewEncoderBlock(s.Root(), cfg)
				require.NoError(t, err)
				y, err = b.Forward(g, x, mask)
				require.NoError(t, err)
			}
			r := randInput32(g, "r", 2, 4, 8)
			prod, err := gorgonia.HadamardProd(y, r)
			require.NoError(t, err)
			loss, err := gorgonia.Sum(prod)
			require.NoError(t, err)
			learn := g.Learnables()
			require.Len(t, learn, len(s.Params()), "every parameter is in the graph")
			grads, err := gorgonia.Grad(loss, learn...)
			require.NoError(t, err)
			vals := make([]gorgonia.Value, len(grads))
			for i := range grads {
				gorgonia.Read(grads[i], &vals[i])
			}
			m := gorgonia.NewTapeMachine(g.ExprGraph)
			defer m.Close()
			require.NoError(t, m.RunAll())
			for i, p := range s.Params() {
				norm := 0.0
				for _, v := range vals[i].(*tensor.Dense).Data().([]float32) {
					norm += float64(v * v)
				}
				require.Positive(t, norm, "%s got no gradient", p.Name)
				require.False(t, math.IsNaN(norm), "%s has a NaN gradient", p.Name)
			}
		})
	}
}

func randInput32(g *Graph, name string, shape ...int) *gorgonia.Node {
	n := g.Input(name, shape...)
	v := n.Value().(*tensor.Dense).Data().([]float32)
	for i := range v {
		v[i] = float32(math.Sin(float64(3*i+len(name)))) * 2
	}
	return n
}

// Dropout is on only in training graphs, and reproducible from the seed.
func TestDropoutLayer(t *testing.T) {
	s, err := NewStore()
	require.NoError(t, err)
	d, err := NewDropout(0.5)
	require.NoError(t, err)
	run := func(opts ...GraphOption) []float32 {
		g := s.NewGraph(opts...)
		x := g.Input("x", 64)
		for i := range x.Value().Data().([]float32) {
			x.Value().Data().([]float32)[i] = 1
		}
		y, err := d.Forward(g, x)
		require.NoError(t, err)
		v := graphtest.Run(t, g.ExprGraph, y)[0]
		return append([]float32(nil), v.(*tensor.Dense).Data().([]float32)...)
	}
	eval := run()
	for _, v := range eval {
		require.Equal(t, float32(1), v, "evaluation graphs do not drop")
	}
	a, b, c := run(Training(), DropoutSeed(4)), run(Training(), DropoutSeed(4)), run(Training(), DropoutSeed(5))
	require.Equal(t, a, b)
	require.NotEqual(t, a, c)
	require.Contains(t, a, float32(0))
	_, err = NewDropout(1)
	require.Error(t, err)
}

// PatchEmbedding equals a Conv2d with kernel = stride = P, flattened to
// (B, N, D) in row-major patch order.
func TestPatchEmbeddingIsConv(t *testing.T) {
	s := newStore64(t)
	const b, c, h, w, p, d = 2, 3, 4, 6, 2, 5
	pe, err := NewPatchEmbedding(s.Root(), c, p, d)
	require.NoError(t, err)
	g := s.NewGraph()
	img := randInput(g, "img", 3, b, c, h, w)
	y, err := pe.Forward(g, img)
	require.NoError(t, err)
	require.Equal(t, []int{b, (h / p) * (w / p), d}, []int(y.Shape()))
	v := graphtest.Run(t, g.ExprGraph, y)[0]
	got := v.(*tensor.Dense).Data().([]float64)
	x := img.Value().Data().([]float64)
	wt, bias := pe.Weight.Value.Data().([]float64), pe.Bias.Value.Data().([]float64)
	for bi := 0; bi < b; bi++ {
		for oy := 0; oy < h/p; oy++ {
			for ox := 0; ox < w/p; ox++ {
				for o := 0; o < d; o++ {
					want := bias[o]
					for ci := 0; ci < c; ci++ {
						for ky := 0; ky < p; ky++ {
							for kx := 0; kx < p; kx++ {
								want += wt[((o*c+ci)*p+ky)*p+kx] * x[((bi*c+ci)*h+oy*p+ky)*w+ox*p+kx]
							}
						}
					}
					n := oy*(w/p) + ox
					require.InDelta(t, want, got[(bi*(h/p)*(w/p)+n)*d+o], 1e-12)
				}
			}
		}
	}
}

// The sinusoidal encoding is defined past any length seen in training, and
// an offset picks the same rows as the long table.
func TestSinusoidalBeyondTrainingLength(t *testing.T) {
	long, err := SinusoidalTable(5000, 8, 10000)
	require.NoError(t, err)
	for _, v := range long {
		require.False(t, math.IsNaN(v) || math.Abs(v) > 1)
	}
	s := newStore64(t)
	pe, err := NewSinusoidal(8, 10000)
	require.NoError(t, err)
	g := s.NewGraph()
	x := g.Input("x", 1, 3, 8) // zeros: the output is the table itself
	y, err := pe.ForwardFrom(g, x, 4000)
	require.NoError(t, err)
	v := graphtest.Run(t, g.ExprGraph, y)[0]
	require.InDeltaSlice(t, long[4000*8:4003*8], v.(*tensor.Dense).Data().([]float64), 1e-12)
}

// Hugging Face's Marian layout holds the paper's values with the sines in
// the first ⌈d/2⌉ columns and the cosines after; the layer, its offset
// form and its position input all use the layout they were made with.
func TestSinusoidalLayouts(t *testing.T) {
	inter, err := SinusoidalTable(7, 6, 10000)
	require.NoError(t, err)
	concat, err := SinusoidalTableLayout(7, 6, 10000, SinCosConcat)
	require.NoError(t, err)
	for pos := 0; pos < 7; pos++ {
		for i := 0; i < 3; i++ {
			require.Equal(t, inter[pos*6+2*i], concat[pos*6+i], "sin %d at %d", i, pos)
			require.Equal(t, inter[pos*6+2*i+1], concat[pos*6+3+i], "cos %d at %d", i, pos)
		}
	}
	// An odd width has one more sine than cosines (HF's sentinel ⌈d/2⌉).
	odd, err := SinusoidalTableLayout(4, 5, 10000, SinCosConcat)
	require.NoError(t, err)
	for pos := 0; pos < 4; pos++ {
		for c := 0; c < 5; c++ {
			want := math.Sin(float64(pos) * math.Pow(10000, -float64(2*c)/5))
			if c >= 3 {
				want = math.Cos(float64(pos) * math.Pow(10000, -float64(2*(c-3))/5))
			}
			require.InDelta(t, want, odd[pos*5+c], 1e-15, "pos %d column %d", pos, c)
		}
	}

	s := newStore64(t)
	pe, err := NewSinusoidalLayout(6, 10000, SinCosConcat)
	require.NoError(t, err)
	g := s.NewGraph()
	y, err := pe.ForwardFrom(g, g.Input("x", 1, 3, 6), 4) // zeros: the output is the table itself
	require.NoError(t, err)
	in := pe.Input(g, 3)
	require.NoError(t, in.SetOffset(4))
	z, err := pe.ForwardInput(g, g.Input("x", 1, 3, 6), in)
	require.NoError(t, err)
	v := graphtest.Run(t, g.ExprGraph, y, z)
	require.Equal(t, concat[4*6:7*6], v[0].(*tensor.Dense).Data().([]float64))
	require.Equal(t, concat[4*6:7*6], v[1].(*tensor.Dense).Data().([]float64))

	_, err = NewSinusoidalLayout(6, 10000, "sin_cos")
	require.ErrorContains(t, err, `sinusoidal layout "sin_cos" must be "interleaved" or "concat"`)
}

// Each bad input is an error naming the problem, never a panic.
func TestBadInput(t *testing.T) {
	s, err := NewStore()
	require.NoError(t, err)
	g := s.NewGraph()
	_, err = NewMultiHeadAttention(s.Root().Sub("a"), AttentionConfig{Dim: 10, Heads: 3})
	require.ErrorContains(t, err, "width 10 is not divisible by 3 heads")

	pos, err := NewLearnedPositional(s.Root().Sub("wpe"), 4, 2)
	require.NoError(t, err)
	_, err = pos.Forward(g, g.Input("x", 1, 5, 2))
	require.ErrorContains(t, err, "sequence of 5 tokens is longer than the 4 learned positions")

	a, err := NewMultiHeadAttention(s.Root().Sub("b"), AttentionConfig{Dim: 4, Heads: 2})
	require.NoError(t, err)
	_, err = a.Forward(g, g.Input("q", 2, 3, 4), nil, g.Input("m", 2, 4), false)
	require.ErrorContains(t, err, "mask (2, 4) must be (B, Tk) = (2, 3)")
	_, err = a.Forward(g, g.Input("q2", 2, 3, 5), nil, nil, false)
	require.ErrorContains(t, err, "must be (B, T, 4)")

	_, err = ParseActivation("swishy")
	require.ErrorContains(t, err, `unknown activation "swishy"`)
	_, err = NewFeedForward(s.Root().Sub("f"), FeedForwardConfig{Dim: 2, Hidden: 4, Activation: "tanh"})
	require.ErrorContains(t, err, `unknown activation "tanh"`)

	l, err := NewLinear(s.Root().Sub("l"), 3, 2, true)
	require.NoError(t, err)
	_, err = l.Forward(g, g.Input("x3", 2, 4))
	require.ErrorContains(t, err, "has 4 features")

	_, err = NewEncoderBlock(s.Root().Sub("e"), BlockConfig{Dim: 4, Heads: 2, FFNDim: 8, Activation: "gelu", Norm: "middle", LayerNormEps: 1e-5})
	require.ErrorContains(t, err, `norm placement "middle"`)

	d, err := NewDecoderBlock(s.Root().Sub("d"), BlockConfig{Dim: 4, Heads: 2, FFNDim: 8, Activation: "gelu", Norm: PreNorm, LayerNormEps: 1e-5})
	require.NoError(t, err)
	_, err = d.Forward(g, g.Input("x4", 1, 2, 4), nil, nil, nil)
	require.ErrorContains(t, err, "needs the encoder output")
	_, err = d.Forward(g, g.Input("x5", 1, 2, 4), nil, g.Input("mem", 2, 2, 4), nil)
	require.ErrorContains(t, err, "same B")

	_, err = NewSinusoidal(8, 1)
	require.ErrorContains(t, err, "base > 1")
}

// Attention dropout acts on the probabilities in training graphs only.
func TestAttentionDropout(t *testing.T) {
	s := newStore64(t)
	a, err := NewMultiHeadAttention(s.Root(), AttentionConfig{Dim: 4, Heads: 2, Dropout: 0.5})
	require.NoError(t, err)
	run := func(opts ...GraphOption) []float64 {
		g := s.NewGraph(opts...)
		y, err := a.Forward(g, randInput(g, "x", 1, 2, 6, 4), nil, nil, false)
		require.NoError(t, err)
		return runRead(t, g, y)[0].(*tensor.Dense).Data().([]float64)
	}
	require.Equal(t, run(), run(), "evaluation is deterministic")
	require.NotEqual(t, run(), run(Training(), DropoutSeed(1)), "training drops attention")
	require.Equal(t, run(Training(), DropoutSeed(1)), run(Training(), DropoutSeed(1)), "and is reproducible")
}

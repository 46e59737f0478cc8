package layers

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Encoder.ForwardWithProbs gives Forward's output (to rounding) and one (B·h, T, T) map
// per layer whose rows are distributions respecting the causal and padding
// masks.
func TestEncoderForwardWithProbs(t *testing.T) {
	const b, tl, d, h, n = 2, 4, 8, 2, 3
	for _, causal := range []bool{false, true} {
		s := newStore64(t)
		cfg := BlockConfig{Dim: d, Heads: h, FFNDim: 16, Activation: "gelu", Norm: PostNorm, LayerNormEps: 1e-5, Bias: true, Causal: causal}
		enc, err := NewEncoder(s.Root(), cfg, n)
		require.NoError(t, err)
		keep := []float64{1, 1, 1, 1, 1, 1, 0, 0} // row 1: two padding tokens
		g := s.NewGraph()
		x := randInput(g, "x", 3, b, tl, d)
		mask, err := g.Constant("mask", keep, b, tl)
		require.NoError(t, err)
		y, probs, err := enc.ForwardWithProbs(g, x, mask)
		require.NoError(t, err)
		require.Len(t, probs, n)
		y2, err := enc.Forward(g, x, mask)
		require.NoError(t, err)
		vals := runRead(t, g, append([]*gorgonia.Node{y, y2}, probs...)...)
		// Forward runs the fused attention kernel, ForwardWithProbs the
		// unfused one: equal up to float64 rounding (seen: 4e-16).
		require.InDeltaSlice(t, vals[1].Data(), vals[0].Data(), 1e-12, "Forward is ForwardWithProbs' output")
		for l, v := range vals[2:] {
			require.Equal(t, tensor.Shape{b * h, tl, tl}, v.Shape(), "layer %d", l)
			p := v.Data().([]float64)
			for r := 0; r < b*h; r++ {
				for i := 0; i < tl; i++ {
					sum := 0.0
					for j := 0; j < tl; j++ {
						w := p[(r*tl+i)*tl+j]
						sum += w
						if keep[(r/h)*tl+j] == 0 || (causal && j > i) {
							require.Zero(t, w, "causal %v layer %d map %d [%d][%d]", causal, l, r, i, j)
						}
					}
					require.InDelta(t, 1, sum, 1e-12)
				}
			}
		}
	}
}

// Encoder.ForwardFirst is Forward's first position, in value and in every
// gradient (parameters and input), for pre- and post-norm stacks with a
// padding mask; a causal stack is refused.
func TestEncoderForwardFirst(t *testing.T) {
	const b, tl, d, h, n = 2, 5, 8, 2, 2
	for _, norm := range []Norm{PreNorm, PostNorm} {
		s, err := NewStore(WithDtype(tensor.Float64), WithSeed(5))
		require.NoError(t, err)
		cfg := BlockConfig{Dim: d, Heads: h, FFNDim: 16, Activation: "gelu", Norm: norm, LayerNormEps: 1e-5, Bias: true}
		enc, err := NewEncoder(s.Root(), cfg, n)
		require.NoError(t, err)
		for _, p := range s.Params() { // biases and norms away from 0 and 1, so that each term shows
			v := p.Value.Data().([]float64)
			for i := range v {
				v[i] += 0.1 * float64((i*7+len(p.Name))%11-5)
			}
		}
		keep := []float64{1, 1, 1, 1, 1, 1, 1, 1, 0, 0}
		run := func(first bool) (out []float64, grads [][]float64) {
			g := s.NewGraph()
			x := randInput(g, "x", 9, b, tl, d)
			mask, err := g.Constant("mask", keep, b, tl)
			require.NoError(t, err)
			var y *gorgonia.Node
			if first {
				y, err = enc.ForwardFirst(g, x, mask)
				require.NoError(t, err)
				y = gorgonia.Must(gorgonia.Reshape(y, []int{b, d}))
			} else {
				full, err := enc.Forward(g, x, mask)
				require.NoError(t, err)
				zeros, err := g.IntConstant("zeros", make([]int, b), b)
				require.NoError(t, err)
				y, err = SelectTokens(full, zeros)
				require.NoError(t, err)
			}
			w := randInput(g, "w", 4, b, d)
			loss := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, w))))
			wrt := append(g.Learnables(), x)
			dl, err := gorgonia.Grad(loss, wrt...)
			require.NoError(t, err)
			vals := runRead(t, g, append([]*gorgonia.Node{y}, dl...)...)
			out = vals[0].Data().([]float64)
			for _, v := range vals[1:] {
				grads = append(grads, v.Data().([]float64))
			}
			return out, grads
		}
		want, wantGrads := run(false)
		got, gotGrads := run(true)
		require.InDeltaSlice(t, want, got, 1e-12, "%s: output", norm)
		require.Len(t, gotGrads, len(wantGrads))
		for i := range wantGrads {
			require.InDeltaSlice(t, wantGrads[i], gotGrads[i], 1e-12, "%s: gradient %d", norm, i)
		}
	}
	s := newStore64(t)
	enc, err := NewEncoder(s.Root(), BlockConfig{Dim: d, Heads: h, FFNDim: 16, Activation: "gelu", Norm: PreNorm, LayerNormEps: 1e-5, Causal: true}, 1)
	require.NoError(t, err)
	g := s.NewGraph()
	_, err = enc.ForwardFirst(g, randInput(g, "x", 1, b, tl, d), nil)
	require.ErrorContains(t, err, "bidirectional")
}

package layers

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Encoder.ForwardWithProbs gives Forward's output and one (B·h, T, T) map
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
		require.Equal(t, vals[1].Data(), vals[0].Data(), "Forward is ForwardWithProbs' output")
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

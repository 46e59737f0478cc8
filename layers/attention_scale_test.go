package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"
)

// An attention with Scale c/√d_head is the default attention with the query
// projection multiplied by c (which multiplies q·kᵀ by c), for a fused and
// a separate query projection, with and without the causal mask.
func TestAttentionScale(t *testing.T) {
	const d, h, b, tl = 8, 2, 2, 5
	for _, fused := range []bool{false, true} {
		for _, c := range []float64{1, math.Sqrt(d / h), 0.25} {
			run := func(scale, mul float64, causal bool) []float64 {
				s, err := NewStore(WithDtype(tensor.Float64), WithSeed(7))
				require.NoError(t, err)
				a, err := NewMultiHeadAttention(s.Root().Sub("attn"), AttentionConfig{Dim: d, Heads: h, Bias: true, FusedQKV: fused, Scale: scale})
				require.NoError(t, err)
				for _, p := range []*Param{a.Query.Weight, a.Query.Bias} {
					v := p.Value.Data().([]float64)
					rows := len(v)
					if fused { // only the query third of c_attn
						rows /= 3
					}
					for i := range v[:rows] {
						v[i] *= mul
					}
				}
				g := s.NewGraph()
				x := g.Input("x", b, tl, d)
				r := rand.New(rand.NewPCG(1, 2))
				for i, xs := 0, x.Value().Data().([]float64); i < len(xs); i++ {
					xs[i] = r.NormFloat64()
				}
				y, err := a.Forward(g, x, nil, nil, causal)
				require.NoError(t, err)
				return runRead(t, g, y)[0].(*tensor.Dense).Data().([]float64)
			}
			for _, causal := range []bool{false, true} {
				want := run(0, c, causal)
				got := run(c/math.Sqrt(d/h), 1, causal)
				require.InDeltaSlice(t, want, got, 1e-12, "fused %v, c %g, causal %v", fused, c, causal)
				if c != 1 {
					require.NotEqual(t, run(0, 1, causal), got, "the scale matters")
				}
			}
		}
	}
	_, err := NewMultiHeadAttention(newStore64(t).Root(), AttentionConfig{Dim: d, Heads: h, Scale: -1})
	require.ErrorContains(t, err, "scale -1")
}

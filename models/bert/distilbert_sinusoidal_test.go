package bert

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
)

// The table is create_sinusoidal_embeddings': row 0 is sin 0, cos 0 …;
// row p's first pair is sin p, cos p; the last column's frequency is
// 10000^(−(dim−2)/dim). A model with it puts the table in its weight and
// never in the graph's learnables (no gradient: training leaves it), and
// a table longer than the positions is refused.
func TestDistilBertSinusoidalTable(t *testing.T) {
	const n, dim = 5, 6
	tab := sinusoidalTable(n, dim)
	require.Equal(t, []float64{0, 1, 0, 1, 0, 1}, tab[:dim])
	require.Equal(t, float64(float32(math.Sin(3))), tab[3*dim])
	require.Equal(t, float64(float32(math.Cos(3))), tab[3*dim+1])
	require.Equal(t, float64(float32(math.Cos(4/math.Pow(10000, 4.0/6)))), tab[4*dim+5])

	c := DistilBertBase()
	c.VocabSize, c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize, c.MaxPositionEmbeddings = 20, dim, 1, 2, 8, n
	c.SinusoidalPosEmbds = true
	m, err := NewForMaskedLM(c, layers.WithSeed(1))
	require.NoError(t, err)
	got, err := layers.Float64s(m.PositionEmbeddings.Weight.Value)
	require.NoError(t, err)
	require.Equal(t, tab, got)
	g := m.Store.NewGraph()
	ids := g.IntInput("input_ids", 1, 4)
	_, err = m.Forward(g, Inputs{IDs: ids})
	require.NoError(t, err)
	require.NotEmpty(t, g.Params())
	for _, p := range g.Params() {
		require.NotEqual(t, "distilbert.embeddings.position_embeddings.weight", p.Name, "the table is a constant")
	}
	_, err = m.Forward(g, Inputs{IDs: g.IntInput("long", 1, n+1)})
	require.ErrorContains(t, err, "exceed")
}

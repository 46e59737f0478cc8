package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The model view is a layer × head grid in reading order; one layer is its
// heads and their average.
func TestAttentionFigure(t *testing.T) {
	const layers, heads = 3, 2
	tokens := []string{"[CLS]", "hi", "[SEP]"}
	maps := make([][][][]float64, layers)
	for l := range maps {
		maps[l] = make([][][]float64, heads)
		for h := range maps[l] {
			maps[l][h] = [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
			maps[l][h][0] = []float64{float64(l) / 10, float64(h) / 10, 1 - float64(l+h)/10}
		}
	}
	all := attentionFigure(maps, tokens, "hi", 0)
	require.Len(t, all.Panels, layers*heads)
	require.Equal(t, heads, all.Columns)
	require.True(t, all.SharedAxes)
	require.Positive(t, all.MaxCell)
	require.Equal(t, "layer 2, head 1", all.Panels[2].Title)
	require.Equal(t, maps[1][0], all.Panels[2].Weights)
	require.Equal(t, tokens, all.Rows)
	require.Equal(t, tokens, all.Cols)

	one := attentionFigure(maps, tokens, "hi", 3)
	require.Len(t, one.Panels, heads+1)
	require.Zero(t, one.Columns)
	require.Equal(t, "head 2", one.Panels[1].Title)
	require.Equal(t, maps[2][1], one.Panels[1].Weights)
	require.Equal(t, "average of heads", one.Panels[2].Title)
	// Layer 3's heads' first rows are (0.2, 0, 0.8) and (0.2, 0.1, 0.7).
	require.InDeltaSlice(t, []float64{0.2, 0.05, 0.75}, one.Panels[2].Weights[0], 1e-12)
}

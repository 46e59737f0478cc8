package bert

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
)

// Answer positions outside the window are treated as transformers'
// BertForQuestionAnswering treats them (positions clamped to [0, T],
// ignore_index T): past the T scores, ignored; negative, the first token;
// layers.IgnoreIndex (padding rows), ignored. Before, a position past T
// stopped the graph with the engine's raw error.
func TestQALossClampsPositions(t *testing.T) {
	m, err := New(testConfig(), layers.WithSeed(4))
	require.NoError(t, err)
	q, err := NewForQuestionAnswering(m)
	require.NoError(t, err)
	const b, tt = 4, 6
	g := q.Store.NewGraph()
	ids, start, end := g.IntInput("input_ids", b, tt), g.IntInput("start_positions", b), g.IntInput("end_positions", b)
	setInts(t, ids, []int{1, 4, 2, 5, 6, 2, 1, 7, 2, 8, 9, 2, 1, 4, 2, 8, 9, 2, 1, 5, 2, 6, 6, 2})
	setInts(t, start, []int{3, 95, 6, layers.IgnoreIndex}) // 95 and 6 (= T): outside the window
	setInts(t, end, []int{4, -5, 2, layers.IgnoreIndex})   // -5: clamped to 0
	loss, s, e, err := q.Loss(g, Inputs{IDs: ids}, start, end)
	require.NoError(t, err)
	vals := runGrads(t, g, loss, s, e, loss)
	ce := func(v []float32, row, target int) float64 {
		x := v[row*tt : row*tt+tt]
		var z float64
		for _, a := range x {
			z += math.Exp(float64(a))
		}
		return math.Log(z) - float64(x[target])
	}
	sv, ev := vals[0].Data().([]float32), vals[1].Data().([]float32)
	startLoss := ce(sv, 0, 3)                                   // rows 1 and 2 ignored
	endLoss := (ce(ev, 0, 4) + ce(ev, 1, 0) + ce(ev, 2, 2)) / 3 // row 1 clamped to 0
	require.InDelta(t, (startLoss+endLoss)/2, float64(vals[2].Data().(float32)), 1e-5)

	// Positions of the wrong shape are refused when the graph is built.
	g = q.Store.NewGraph()
	_, _, _, err = q.Loss(g, Inputs{IDs: g.IntInput("input_ids", b, tt)}, g.IntInput("start_positions", b, 1), g.IntInput("end_positions", b))
	require.ErrorContains(t, err, "answer positions")
}

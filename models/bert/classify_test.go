package bert

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// Through models.Classifier, as the shared pipeline calls it (right-padded
// ids, a mask, each row's last position): a padded row scores as the same
// text alone, so the mask reaches the attention.
func TestClassLogitsMasksPadding(t *testing.T) {
	m, err := New(testConfig(), layers.WithDtype(tensor.Float64), layers.WithSeed(6))
	require.NoError(t, err)
	var c models.Classifier
	c, err = NewForSequenceClassification(m, []string{"a", "b", "c"})
	require.NoError(t, err)
	require.Equal(t, 0, c.PadID())
	run := func(ids []int, mask []float64, b, tl int) []float64 {
		g := c.ParamStore().NewGraph()
		in := models.ClassifierInputs{IDs: g.IntInput("ids", b, tl), Mask: g.Input("mask", b, tl), Last: g.IntInput("last", b)}
		setInts(t, in.IDs, ids)
		setFloats(t, g, in.Mask, mask)
		y, err := c.ClassLogits(g, in)
		require.NoError(t, err)
		vm := gorgonia.NewTapeMachine(g.ExprGraph)
		defer vm.Close()
		require.NoError(t, vm.RunAll())
		return slices.Clone(y.Value().Data().([]float64))
	}
	alone := run([]int{1, 7, 9, 2}, []float64{1, 1, 1, 1}, 1, 4)
	padded := run([]int{1, 5, 6, 8, 11, 2, 1, 7, 9, 2, 0, 0}, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, 2, 6)
	require.InDeltaSlice(t, alone, padded[3:], 1e-12)
	unmasked := run([]int{1, 7, 9, 2, 0, 0}, []float64{1, 1, 1, 1, 1, 1}, 1, 6)
	require.Greater(t, abs(unmasked[0]-alone[0])+abs(unmasked[1]-alone[1]), 1e-6, "the padding must matter without the mask")
}

package ops

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// PaddedPositions is transformers' create_position_ids_from_input_ids:
// pad + the count of non-pad tokens so far, pad at a pad, wherever the pad
// sits in the row; read at run time, so one graph serves every batch.
func TestPaddedPositions(t *testing.T) {
	g := gorgonia.NewGraph()
	ids := gorgonia.NewMatrix(g, tensor.Int, gorgonia.WithShape(2, 5), gorgonia.WithName("ids"))
	pos, err := PaddedPositions(ids, 1)
	require.NoError(t, err)
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	for _, c := range []struct{ ids, want []int }{
		{[]int{0, 7, 9, 2, 1, 0, 2, 1, 1, 1}, []int{2, 3, 4, 5, 1, 2, 3, 1, 1, 1}},
		{[]int{1, 1, 0, 5, 2, 0, 1, 5, 1, 2}, []int{1, 1, 2, 3, 4, 2, 1, 3, 1, 4}},
	} {
		require.NoError(t, gorgonia.Let(ids, tensor.New(tensor.WithShape(2, 5), tensor.WithBacking(c.ids))))
		require.NoError(t, vm.RunAll())
		require.Equal(t, c.want, pos.Value().Data().([]int))
		vm.Reset()
	}
	_, err = PaddedPositions(gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(3), gorgonia.WithName("v")), 1)
	require.ErrorContains(t, err, "must be (B, T)")
	_, err = PaddedPositions(gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 2), gorgonia.WithName("f")), 1)
	require.ErrorContains(t, err, "want int")
}

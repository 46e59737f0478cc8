package ops

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// PickLabelled keeps the labelled rows in order, pads with zero rows
// labelled ignore, and its gradient scatters the rows back; bad shapes are
// errors at build time, too many labels at run time.
func TestPickLabelled(t *testing.T) {
	for _, c := range []struct {
		name       string
		labels     []int
		m          int
		wantRows   []float64
		wantLabels []int
		wantGrad   []float64 // d(sum of rows · (1, 2, …))/dx
		err        string
	}{
		{"pad", []int{-1, 7, -1, 5}, 3, []float64{2, 3, 6, 7, 0, 0}, []int{7, 5, -1}, []float64{0, 0, 1, 2, 0, 0, 3, 4}, ""},
		{"exact", []int{4, -1, -1, 6}, 2, []float64{0, 1, 6, 7}, []int{4, 6}, []float64{1, 2, 0, 0, 0, 0, 3, 4}, ""},
		{"none", []int{-1, -1, -1, -1}, 1, []float64{0, 0}, []int{-1}, []float64{0, 0, 0, 0, 0, 0, 0, 0}, ""},
		{"overflow", []int{1, 2, 3, -1}, 2, nil, nil, nil, "3 labelled positions exceed the 2 slots"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := gorgonia.NewGraph()
			x := gorgonia.NewTensor(g, tensor.Float64, 3, gorgonia.WithShape(2, 2, 2), gorgonia.WithName("x"),
				gorgonia.WithValue(tensor.New(tensor.WithShape(2, 2, 2), tensor.WithBacking([]float64{0, 1, 2, 3, 4, 5, 6, 7}))))
			l := gorgonia.NewTensor(g, tensor.Int, 2, gorgonia.WithShape(2, 2), gorgonia.WithName("l"),
				gorgonia.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking(c.labels))))
			rows, picked, err := PickLabelled(x, l, c.m, -1)
			require.NoError(t, err)
			require.Equal(t, tensor.Shape{c.m, 2}, rows.Shape())
			w := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(c.m, 2), gorgonia.WithName("w"),
				gorgonia.WithValue(tensor.New(tensor.WithShape(c.m, 2), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}[:2*c.m]))))
			prod, err := gorgonia.HadamardProd(rows, w)
			require.NoError(t, err)
			s, err := gorgonia.Sum(prod)
			require.NoError(t, err)
			dx, err := gorgonia.Grad(s, x)
			require.NoError(t, err)
			vm := gorgonia.NewTapeMachine(g)
			defer vm.Close()
			err = vm.RunAll()
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.wantRows, rows.Value().Data())
			require.Equal(t, c.wantLabels, picked.Value().Data())
			require.Equal(t, c.wantGrad, dx[0].Value().Data())
		})
	}
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(4, 2), gorgonia.WithName("x"))
	l := gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(3), gorgonia.WithName("l"))
	_, _, err := PickLabelled(x, l, 2, -1)
	require.ErrorContains(t, err, "do not fit input")
	l4 := gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(4), gorgonia.WithName("l4"))
	_, _, err = PickLabelled(x, l4, 0, -1)
	require.ErrorContains(t, err, "0 slots")
}

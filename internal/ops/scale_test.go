package ops

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/gradcheck"
)

func TestScale(t *testing.T) {
	g := gorgonia.NewGraph()
	x := input(g, "x", randDense(3, 2, 3))
	y, err := Scale(x, -2.5)
	require.NoError(t, err)
	got := eval(t, g, y).Data().([]float64)
	for i, v := range x.Value().Data().([]float64) {
		require.Equal(t, -2.5*v, got[i])
	}
	requireGrad(t, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := input(g, "x", randDense(4, 3, 4))
		y, err := Scale(x, math.Sqrt(8))
		return y, gorgonia.Nodes{x}, err
	}, gradcheck.Options{})

	_, err = Scale(x, math.Inf(1))
	require.ErrorContains(t, err, "not finite")
}

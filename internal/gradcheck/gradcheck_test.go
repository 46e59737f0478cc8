package gradcheck

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func unary(f func(*gorgonia.Node) (*gorgonia.Node, error)) Build {
	return func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := gorgonia.NewTensor(g, tensor.Float64, 1, gorgonia.WithShape(4), gorgonia.WithName("x"),
			gorgonia.WithValue(tensor.New(tensor.WithBacking([]float64{0.5, 1, 2, 3}))))
		y, err := f(x)
		return y, gorgonia.Nodes{x}, err
	}
}

func TestCheckPassesACorrectGradient(t *testing.T) {
	res, err := Check(unary(gorgonia.Square), Options{})
	require.NoError(t, err)
	require.False(t, res.Failed, "%v", res)
	require.Equal(t, 4, res.Checked)
}

// Gorgonia v0.9.18's InverseSqrt has a wrong gradient; the check must see it.
func TestCheckCatchesAWrongGradient(t *testing.T) {
	res, err := Check(unary(gorgonia.InverseSqrt), Options{})
	require.NoError(t, err)
	require.True(t, res.Failed, "InverseSqrt's gradient is known to be wrong: %v", res)
}

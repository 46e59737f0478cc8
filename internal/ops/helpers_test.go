package ops

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/gradcheck"
	"github.com/d73a19ff/zoo/internal/graphtest"
)

// randDense returns a float64 tensor of N(0, 1) values from a fixed seed.
func randDense(seed uint64, shape ...int) *tensor.Dense {
	rng := rand.New(rand.NewPCG(seed, 7))
	v := make([]float64, tensor.Shape(shape).TotalSize())
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
}

// input adds a named float node bound to value.
func input(g *gorgonia.ExprGraph, name string, value *tensor.Dense) *gorgonia.Node {
	return gorgonia.NewTensor(g, value.Dtype(), value.Dims(), gorgonia.WithShape(value.Shape().Clone()...), gorgonia.WithValue(value), gorgonia.WithName(name))
}

// intInput adds an int node.
func intInput(g *gorgonia.ExprGraph, name string, shape []int, v []int) *gorgonia.Node {
	t := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
	return gorgonia.NewTensor(g, tensor.Int, len(shape), gorgonia.WithShape(shape...), gorgonia.WithValue(t), gorgonia.WithName(name))
}

// requireGrad runs a finite-difference check and fails the test on mismatch.
func requireGrad(t *testing.T, build gradcheck.Build, o gradcheck.Options) {
	t.Helper()
	res, err := gradcheck.Check(build, o)
	require.NoError(t, err)
	require.False(t, res.Failed, "%v", res)
	require.Positive(t, res.Checked)
}

// eval runs a graph once and returns a copy of out's value.
func eval(t *testing.T, g *gorgonia.ExprGraph, out *gorgonia.Node) *tensor.Dense {
	t.Helper()
	v := graphtest.Run(t, g, out)[0]
	d, ok := v.(*tensor.Dense)
	require.True(t, ok, "output is %T", v)
	return d
}

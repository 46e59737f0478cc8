package ops

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/gradcheck"
)

func TestLinearValue(t *testing.T) {
	g := gorgonia.NewGraph()
	xv, wv, bv := randDense(1, 2, 3, 4), randDense(2, 5, 4), randDense(3, 5)
	y, err := Linear(input(g, "x", xv), input(g, "w", wv), input(g, "b", bv))
	require.NoError(t, err)
	require.Equal(t, []int{2, 3, 5}, []int(y.Shape()))
	got := eval(t, g, y).Data().([]float64)
	x, w, b := xv.Data().([]float64), wv.Data().([]float64), bv.Data().([]float64)
	for r := 0; r < 6; r++ {
		for o := 0; o < 5; o++ {
			want := b[o]
			for i := 0; i < 4; i++ {
				want += x[r*4+i] * w[o*4+i]
			}
			require.InDelta(t, want, got[r*5+o], 1e-12, "row %d out %d", r, o)
		}
	}
}

func TestLinearGrad(t *testing.T) {
	for _, bias := range []bool{true, false} {
		requireGrad(t, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
			x, w := input(g, "x", randDense(1, 2, 3, 4)), input(g, "w", randDense(2, 5, 4))
			wrt := gorgonia.Nodes{x, w}
			var b *gorgonia.Node
			if bias {
				b = input(g, "b", randDense(3, 5))
				wrt = append(wrt, b)
			}
			y, err := Linear(x, w, b)
			return y, wrt, err
		}, gradcheck.Options{})
	}
}

// A 4-D weight is used as (out, prod(rest)), as a Conv2d weight over patches.
func TestLinearConvWeightGrad(t *testing.T) {
	requireGrad(t, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
		x, w, b := input(g, "x", randDense(1, 2, 8)), input(g, "w", randDense(2, 3, 2, 2, 2)), input(g, "b", randDense(3, 3))
		y, err := Linear(x, w, b)
		return y, gorgonia.Nodes{x, w, b}, err
	}, gradcheck.Options{})
}

func TestLinearBadShapes(t *testing.T) {
	g := gorgonia.NewGraph()
	x, w := input(g, "x", randDense(1, 2, 3)), input(g, "w", randDense(2, 5, 4))
	_, err := Linear(x, w, nil)
	require.ErrorContains(t, err, "has 3 features")
	_, err = Linear(input(g, "x2", randDense(1, 2, 4)), w, input(g, "b", randDense(3, 4)))
	require.ErrorContains(t, err, "bias")
}

// TestLinearValueFloat32 checks the float32 forward pass, whose bias is
// added inside the blocked product (sgemmBias), at sizes with tile edges
// and with and without a bias.
func TestLinearValueFloat32(t *testing.T) {
	for _, s := range [][3]int{{50, 37, 41}, {7, 3, 5}, {130, 129, 16}, {2, 8, 3}} {
		for _, bias := range []bool{true, false} {
			n, in, out := s[0], s[1], s[2]
			rng := rand.New(rand.NewPCG(uint64(n), uint64(out)))
			fill := func(k int) []float32 {
				v := make([]float32, k)
				for i := range v {
					v[i] = rng.Float32() - 0.5
				}
				return v
			}
			x, w, b := fill(n*in), fill(out*in), fill(out)
			g := gorgonia.NewGraph()
			xn := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(n, in), gorgonia.WithName("x"), gorgonia.WithValue(tensor.New(tensor.WithShape(n, in), tensor.WithBacking(x))))
			wn := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(out, in), gorgonia.WithName("w"), gorgonia.WithValue(tensor.New(tensor.WithShape(out, in), tensor.WithBacking(w))))
			var bn *gorgonia.Node
			if bias {
				bn = gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(out), gorgonia.WithName("b"), gorgonia.WithValue(tensor.New(tensor.WithShape(out), tensor.WithBacking(b))))
			}
			y, err := Linear(xn, wn, bn)
			require.NoError(t, err)
			got := eval(t, g, y).Data().([]float32)
			for r := 0; r < n; r++ {
				for o := 0; o < out; o++ {
					want := 0.0
					if bias {
						want = float64(b[o])
					}
					for i := 0; i < in; i++ {
						want += float64(x[r*in+i]) * float64(w[o*in+i])
					}
					require.InDelta(t, want, float64(got[r*out+o]), 1e-5, "%v bias %v: row %d out %d", s, bias, r, o)
				}
			}
		}
	}
}

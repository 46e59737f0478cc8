package ops

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/gradcheck"
)

// Rotary rotates each pair (x[i], x[i+d/2]) of a head by pos·inv_freq[i],
// the same for every head of a row; the rotation keeps norms, its gradient
// passes finite differences, and float32 agrees with float64 to float32
// rounding.
func TestRotary(t *testing.T) {
	const b, heads, tl, d, theta = 2, 3, 4, 6, 100.0
	pos := []int{0, 1, 2, 3, 7, 8, 0, 40}
	x := randDense(1, b*heads, tl, d)
	g := gorgonia.NewGraph()
	y, err := Rotary(input(g, "x", x), intInput(g, "pos", []int{b, tl}, pos), theta)
	require.NoError(t, err)
	got := eval(t, g, y).Data().([]float64)
	xs := x.Data().([]float64)
	for n := range b * heads {
		for j := range tl {
			p := pos[(n/heads)*tl+j]
			row := (n*tl + j) * d
			var normX, normY float64
			for i := range d / 2 {
				a := float64(p) / math.Pow(theta, float64(2*i)/d)
				x1, x2 := xs[row+i], xs[row+i+d/2]
				require.InDelta(t, x1*math.Cos(a)-x2*math.Sin(a), got[row+i], 1e-12)
				require.InDelta(t, x2*math.Cos(a)+x1*math.Sin(a), got[row+i+d/2], 1e-12)
				normX += x1*x1 + x2*x2
				normY += got[row+i]*got[row+i] + got[row+i+d/2]*got[row+i+d/2]
			}
			require.InDelta(t, normX, normY, 1e-12)
		}
	}
	requireGrad(t, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
		xn := input(g, "x", randDense(2, b*heads, tl, d))
		y, err := Rotary(xn, intInput(g, "pos", []int{b, tl}, pos), theta)
		return y, gorgonia.Nodes{xn}, err
	}, gradcheck.Options{})

	f32 := make([]float32, len(xs))
	for i, v := range xs {
		f32[i] = float32(v)
	}
	g32 := gorgonia.NewGraph()
	y32, err := Rotary(input(g32, "x", tensor.New(tensor.WithShape(b*heads, tl, d), tensor.WithBacking(f32))), intInput(g32, "pos", []int{b, tl}, pos), theta)
	require.NoError(t, err)
	for i, v := range eval(t, g32, y32).Data().([]float32) {
		require.InDelta(t, got[i], float64(v), 1e-5, "float32 element %d", i)
	}
}

// Rotary refuses shapes that do not fit and a base that is no base.
func TestRotaryShapes(t *testing.T) {
	g := gorgonia.NewGraph()
	x := input(g, "x", randDense(1, 4, 3, 4))
	for _, c := range []struct {
		x     *gorgonia.Node
		pos   []int
		theta float64
		want  string
	}{
		{x, []int{3, 3}, 10000, "(B·h, T, d) and (B, T)"},
		{x, []int{2, 2}, 10000, "(B·h, T, d) and (B, T)"},
		{input(g, "odd", randDense(1, 4, 3, 5)), []int{2, 3}, 10000, "d even"},
		{x, []int{2, 3}, 1, "more than 1"},
		{x, []int{2, 3}, math.Inf(1), "more than 1"},
	} {
		_, err := Rotary(c.x, intInput(g, "pos", c.pos, make([]int, c.pos[0]*c.pos[1])), c.theta)
		require.ErrorContains(t, err, c.want)
	}
}

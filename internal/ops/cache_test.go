package ops

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/gradcheck"
)

// Splitting part k of a fused (B, T, 3C) projection equals splitting that
// column block on its own, and its gradient checks.
func TestSplitHeadsPart(t *testing.T) {
	x := randDense(1, 2, 3, 12) // 3 parts of C=4, 2 heads
	for part := 0; part < 3; part++ {
		g := gorgonia.NewGraph()
		got, err := SplitHeadsPart(input(g, "x", x), 2, part, 3)
		require.NoError(t, err)
		cols := make([]float64, 2*3*4)
		xd := x.Data().([]float64)
		for r := 0; r < 6; r++ {
			copy(cols[r*4:(r+1)*4], xd[r*12+part*4:r*12+part*4+4])
		}
		want, err := SplitHeads(input(g, "cols", tensor.New(tensor.WithShape(2, 3, 4), tensor.WithBacking(cols))), 2)
		require.NoError(t, err)
		var gv, wv gorgonia.Value
		gorgonia.Read(got, &gv)
		gorgonia.Read(want, &wv)
		m := gorgonia.NewTapeMachine(g)
		require.NoError(t, m.RunAll())
		m.Close()
		require.Equal(t, wv.Data(), gv.Data(), "part %d", part)
		requireGrad(t, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
			xn := input(g, "x", randDense(2, 2, 3, 12))
			y, err := SplitHeadsPart(xn, 2, part, 3)
			return y, gorgonia.Nodes{xn}, err
		}, gradcheck.Options{})
	}
}

// A causal offset of 0 against a longer key axis lets query i see keys 0…i,
// as a decoder writing a cache from slot 0 needs.
func TestCausalSoftmaxOffset(t *testing.T) {
	g := gorgonia.NewGraph()
	y, err := CausalSoftmax(input(g, "s", randDense(1, 2, 3, 6)), nil, 1, 0)
	require.NoError(t, err)
	p := eval(t, g, y).Data().([]float64)
	for r := 0; r < 6; r++ {
		i := r % 3
		for j := 0; j < 6; j++ {
			if j > i {
				require.Zero(t, p[r*6+j], "row %d key %d", r, j)
			} else {
				require.Positive(t, p[r*6+j])
			}
		}
	}
	requireGrad(t, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
		s := input(g, "s", randDense(3, 2, 3, 6))
		y, err := CausalSoftmax(s, nil, 0.5, 1)
		return y, gorgonia.Nodes{s}, err
	}, gradcheck.Options{})
}

// WriteSlots writes in place into the bound cache, so the cache outlives the
// run, and rejects a write past its capacity.
func TestWriteSlots(t *testing.T) {
	g := gorgonia.NewGraph()
	cache := tensor.New(tensor.WithShape(2, 4, 3), tensor.Of(tensor.Float64))
	cn := input(g, "cache", cache)
	xn := input(g, "x", randDense(1, 2, 2, 3))
	slot := intInput(g, "slot", []int{1}, []int{1})
	y, err := WriteSlots(cn, xn, slot)
	require.NoError(t, err)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	require.NoError(t, m.RunAll())
	x := xn.Value().Data().([]float64)
	c := cache.Data().([]float64)
	require.Equal(t, make([]float64, 3), c[0:3], "slot 0 untouched")
	require.Equal(t, x[0:6], c[3:9], "row 0 at slots 1-2")
	require.Equal(t, x[6:12], c[12+3:12+9], "row 1 at slots 1-2")
	m.Reset()
	require.NoError(t, gorgonia.Let(slot, tensor.New(tensor.WithShape(1), tensor.WithBacking([]int{3}))))
	require.ErrorContains(t, m.RunAll(), "2 rows at slot 3 overflow the cache of 4")
	_ = y
	_, err = WriteSlots(cn, input(g, "big", randDense(1, 2, 5, 3)), slot)
	require.ErrorContains(t, err, "does not fit cache")
}

func TestAdd(t *testing.T) {
	requireGrad(t, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
		a, b := input(g, "a", randDense(1, 2, 3)), input(g, "b", randDense(2, 2, 3))
		y, err := Add(a, b)
		return y, gorgonia.Nodes{a, b}, err
	}, gradcheck.Options{})
	g := gorgonia.NewGraph()
	_, err := Add(input(g, "a", randDense(1, 2, 3)), input(g, "b", randDense(2, 3, 2)))
	require.ErrorContains(t, err, "shapes (2, 3) and (3, 2) differ")
}

func TestPrependAndSelectTokens(t *testing.T) {
	requireGrad(t, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
		x, tok := input(g, "x", randDense(1, 2, 3, 4)), input(g, "cls", randDense(2, 1, 1, 4))
		y, err := PrependToken(x, tok)
		return y, gorgonia.Nodes{x, tok}, err
	}, gradcheck.Options{})
	requireGrad(t, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := input(g, "x", randDense(3, 3, 4, 2))
		y, err := SelectTokens(x, intInput(g, "idx", []int{3}, []int{0, 3, 1}))
		return y, gorgonia.Nodes{x}, err
	}, gradcheck.Options{})

	g := gorgonia.NewGraph()
	x := input(g, "x", randDense(1, 2, 3, 4))
	y, err := PrependToken(x, input(g, "cls", randDense(2, 4)))
	require.NoError(t, err)
	v := eval(t, g, y)
	require.Equal(t, []int{2, 4, 4}, []int(v.Shape()))
	xv, yv := x.Value().Data().([]float64), v.Data().([]float64)
	require.Equal(t, xv[12:24], yv[20:32], "item 1's tokens follow its class token")

	g = gorgonia.NewGraph()
	s, err := SelectTokens(input(g, "x", randDense(1, 2, 3, 4)), intInput(g, "idx", []int{2}, []int{0, 3}))
	require.NoError(t, err)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	require.ErrorContains(t, m.RunAll(), "row 1 index 3 is outside [0, 3)")
	_ = s
}

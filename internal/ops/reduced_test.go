package ops

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	kernels "github.com/d73a19ff/zoo/internal/gemm"
)

// f32Dense is randDense in float32.
func f32Dense(seed uint64, shape ...int) *tensor.Dense {
	v := randDense(seed, shape...).Data().([]float64)
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
}

// widened is r as a float32 (Rows, Cols) tensor.
func widened(r *kernels.Reduced) *tensor.Dense {
	w := make([]float32, r.Rows*r.Cols)
	for i := 0; i < r.Rows; i++ {
		r.Row(i, w[i*r.Cols:(i+1)*r.Cols])
	}
	return tensor.New(tensor.WithShape(r.Rows, r.Cols), tensor.WithBacking(w))
}

// TestLinearReduced checks LinearReduced against Linear on the widened
// weights, with and without a bias, for one row (a decoding step), a few
// and many (the widened-band path), and an input width with a tail.
func TestLinearReduced(t *testing.T) {
	for _, f := range []kernels.Format{kernels.BF16, kernels.Int8} {
		for _, c := range []struct{ rows, in, out int }{{1, 70, 9}, {3, 64, 130}, {40, 33, 17}} {
			for _, bias := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/%dx%dx%d/bias=%v", f, c.rows, c.in, c.out, bias), func(t *testing.T) {
					r, err := kernels.NewReduced(f, f32Dense(2, c.out, c.in).Data().([]float32), c.out, c.in)
					require.NoError(t, err)
					g := gorgonia.NewGraph()
					xv := f32Dense(1, 1, c.rows, c.in)
					x := input(g, "x", xv)
					var b, b2 *gorgonia.Node
					if bias {
						bv := f32Dense(3, c.out)
						b, b2 = input(g, "b", bv), input(g, "b2", bv)
					}
					got, err := LinearReduced(x, r, "w", b)
					require.NoError(t, err)
					require.Equal(t, []int{1, c.rows, c.out}, []int(got.Shape()))
					want, err := Linear(input(g, "x2", xv), input(g, "w", widened(r)), b2)
					require.NoError(t, err)
					vs := evalAll(t, g, got, want)
					require.InDeltaSlice(t, vs[1], vs[0], 1e-4)
				})
			}
		}
	}
}

// evalAll runs g once and returns outs' values as float64s.
func evalAll(t *testing.T, g *gorgonia.ExprGraph, outs ...*gorgonia.Node) [][]float64 {
	t.Helper()
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	require.NoError(t, m.RunAll())
	var res [][]float64
	for _, o := range outs {
		var v []float64
		for _, x := range o.Value().Data().([]float32) {
			v = append(v, float64(x))
		}
		res = append(res, v)
	}
	return res
}

func TestGatherReduced(t *testing.T) {
	r, err := kernels.NewReduced(kernels.Int8, f32Dense(2, 7, 40).Data().([]float32), 7, 40)
	require.NoError(t, err)
	g := gorgonia.NewGraph()
	ids := []int{3, 0, 6, 3}
	got, err := GatherReduced(r, "emb", intInput(g, "ids", []int{2, 2}, ids))
	require.NoError(t, err)
	want, err := Gather(input(g, "w", widened(r)), intInput(g, "ids2", []int{2, 2}, ids))
	require.NoError(t, err)
	vs := evalAll(t, g, got, want)
	require.Equal(t, []int{2, 2, 40}, []int(got.Shape()))
	require.Equal(t, vs[1], vs[0])

	g = gorgonia.NewGraph()
	bad, err := GatherReduced(r, "emb", intInput(g, "ids", []int{1}, []int{7}))
	require.NoError(t, err)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	require.ErrorContains(t, m.RunAll(), "outside the table's 7 rows")
	_ = bad
}

// TestReducedRefusesGradient checks that differentiating through a
// reduced weight is an error naming the weight, saying so.
func TestReducedRefusesGradient(t *testing.T) {
	r, err := kernels.NewReduced(kernels.BF16, f32Dense(2, 5, 4).Data().([]float32), 5, 4)
	require.NoError(t, err)
	g := gorgonia.NewGraph()
	x := input(g, "x", f32Dense(1, 2, 4))
	y, err := LinearReduced(x, r, "model.layers.0.mlp.up_proj.weight", nil)
	require.NoError(t, err)
	loss, err := gorgonia.Sum(y)
	require.NoError(t, err)
	_, err = gorgonia.Grad(loss, x)
	require.Error(t, err)
	require.ErrorContains(t, err, "no gradient")
	require.ErrorContains(t, err, "up_proj")
}

func TestLinearReducedBadInput(t *testing.T) {
	r, err := kernels.NewReduced(kernels.BF16, make([]float32, 20), 5, 4)
	require.NoError(t, err)
	g := gorgonia.NewGraph()
	_, err = LinearReduced(input(g, "x", f32Dense(1, 2, 3)), r, "w", nil)
	require.ErrorContains(t, err, "4 features")
	_, err = LinearReduced(input(g, "x64", randDense(1, 2, 4)), r, "w", nil)
	require.ErrorContains(t, err, "float32")
	_, err = LinearReduced(input(g, "x2", f32Dense(1, 2, 4)), r, "w", input(g, "b", f32Dense(1, 4)))
	require.ErrorContains(t, err, "bias")
}

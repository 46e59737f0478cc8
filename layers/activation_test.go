package layers

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Every Hugging Face name the zoo implements parses, and is written back as
// itself; the zoo's old "gelu_tanh" is written as "gelu_new".
func TestActivationNames(t *testing.T) {
	for _, c := range []struct {
		name, hf string
		act      Activation
	}{
		{"relu", "relu", ReLU},
		{"gelu", "gelu", GELU},
		{"gelu_python", "gelu_python", GELU},
		{"gelu_new", "gelu_new", GELUTanh},
		{"gelu_pytorch_tanh", "gelu_pytorch_tanh", GELUTanh},
		{"gelu_accurate", "gelu_accurate", GELUTanh},
		{"gelu_fast", "gelu_fast", GELUTanh},
		{"gelu_tanh", "gelu_new", GELUTanh},
		{"silu", "silu", SiLU},
		{"swish", "swish", SiLU},
	} {
		a, err := ParseActivation(c.name)
		require.NoError(t, err, c.name)
		require.Equal(t, c.act, a, c.name)
		hf, err := HFActivationName(c.name)
		require.NoError(t, err, c.name)
		require.Equal(t, c.hf, hf, c.name)
		back, err := ParseActivation(hf)
		require.NoError(t, err)
		require.Equal(t, a, back, "%s is written as a name that reads back the same", c.name)
	}
	// ACT2FN names whose functions the zoo does not compute.
	for _, name := range []string{"tanh", "quick_gelu", "gelu_10", "mish", "linear", "sigmoid", "relu6", "GELU"} {
		_, err := ParseActivation(name)
		require.ErrorContains(t, err, `unknown activation "`+name+`"`)
		_, err = HFActivationName(name)
		require.ErrorContains(t, err, `unknown activation "`+name+`"`)
	}
}

// The tanh GELU the zoo computes is each of transformers' tanh-GELU
// formulas (activations.py), evaluated here in float64 as written there:
// gelu_new and gelu_accurate exactly, gelu_fast (√(2/π) rounded to
// 0.7978845608, the polynomial factored) within 1e-12.
func TestTanhGELUFormulas(t *testing.T) {
	const n = 801
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = -8 + 16*float64(i)/(n-1)
	}
	s := newStore64(t)
	g := s.NewGraph()
	x := g.Input("x", n)
	require.NoError(t, gorgonia.Let(x, tensor.New(tensor.WithShape(n), tensor.WithBacking(append([]float64(nil), xs...)))))
	y, err := Activate(x, GELUTanh)
	require.NoError(t, err)
	got := runRead(t, g, y)[0].(*tensor.Dense).Data().([]float64)
	for _, f := range []struct {
		name string
		fn   func(x float64) float64
		tol  float64
	}{
		{"gelu_new", func(x float64) float64 {
			return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*math.Pow(x, 3))))
		}, 1e-15},
		{"gelu_fast", func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(x*0.7978845608*(1+0.044715*x*x))) }, 1e-12},
	} {
		for i, v := range xs {
			require.InDelta(t, f.fn(v), got[i], f.tol, "%s(%g)", f.name, v)
		}
	}
}

package train

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
)

// goldenPath is written by tools/pytorch/adamw_golden.py (PyTorch 1.13).
const goldenPath = "testdata/adamw_golden.safetensors"

// golden is the decoded golden file.
type golden struct {
	t    *testing.T
	f    *safetensors.File
	meta map[string]string
}

func readGolden(t *testing.T) golden {
	t.Helper()
	f, err := safetensors.ReadFile(goldenPath)
	require.NoError(t, err)
	return golden{t, f, f.Metadata()}
}

// f64 returns the named tensor's values and shape.
func (g golden) f64(name string) ([]float64, []int) {
	g.t.Helper()
	ts, ok := g.f.Tensor(name)
	require.True(g.t, ok, "golden tensor %s", name)
	v, err := ts.Float64s()
	require.NoError(g.t, err)
	return v, ts.Shape
}

// f32 returns the named tensor's values rounded to float32.
func (g golden) f32(name string) []float32 {
	g.t.Helper()
	ts, ok := g.f.Tensor(name)
	require.True(g.t, ok, "golden tensor %s", name)
	v, err := ts.Float32s()
	require.NoError(g.t, err)
	return v
}

// num parses a float metadata value.
func (g golden) num(key string) float64 {
	g.t.Helper()
	v, err := strconv.ParseFloat(g.meta[key], 64)
	require.NoError(g.t, err, "metadata %s", key)
	return v
}

// dense64 and dense32 wrap values as tensors of shape.
func dense64(shape []int, v []float64) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), v...)))
}

func dense32(shape []int, v []float32) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float32(nil), v...)))
}

// requireClose fails unless |got − want| ≤ tol·max(1, |want|) everywhere;
// it returns the largest such scaled error.
func requireClose[T float32 | float64](t *testing.T, want []float64, got []T, tol float64, what string) float64 {
	t.Helper()
	require.Len(t, got, len(want), what)
	worst := 0.0
	for i := range want {
		e := math.Abs(float64(got[i])-want[i]) / math.Max(1, math.Abs(want[i]))
		if !(e <= tol) {
			t.Fatalf("%s[%d] = %.17g, want %.17g (scaled error %.3g > %.3g)", what, i, float64(got[i]), want[i], e, tol)
		}
		worst = math.Max(worst, e)
	}
	return worst
}

// goldenAdamW builds the golden parameters in dtype dt and an optimizer
// with the golden hyperparameters and the default DecayRule.
func goldenAdamW(g golden, dt tensor.Dtype) ([]*layers.Param, *AdamW) {
	g.t.Helper()
	var params []*layers.Param
	for _, name := range strings.Split(g.meta["adamw.params"], ",") {
		v, shape := g.f64("adamw.init." + name)
		p := &layers.Param{Name: name, Value: dense64(shape, v)}
		if dt == tensor.Float32 {
			p.Value = dense32(shape, g.f32("adamw.init."+name))
		}
		params = append(params, p)
	}
	opt, err := NewAdamW(params, AdamWConfig{
		Beta1: g.num("adamw.beta1"), Beta2: g.num("adamw.beta2"),
		Eps: g.num("adamw.eps"), WeightDecay: g.num("adamw.weight_decay"),
		Decay: NoDecayOf("wte.weight"), // the groups of tools/pytorch/adamw_golden.py
	})
	require.NoError(g.t, err)
	return params, opt
}

// stepGrads returns the golden gradients of step k (1-based) in dtype dt.
func (g golden) stepGrads(params []*layers.Param, k int, dt tensor.Dtype) []gorgonia.Value {
	g.t.Helper()
	grads := make([]gorgonia.Value, len(params))
	for i, p := range params {
		key := "adamw.grad." + strconv.Itoa(k) + "." + p.Name
		v, shape := g.f64(key)
		grads[i] = dense64(shape, v)
		if dt == tensor.Float32 {
			grads[i] = dense32(shape, g.f32(key))
		}
	}
	return grads
}

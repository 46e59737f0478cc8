package train

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
)

// Five steps of torch.optim.AdamW in float64 with two parameter groups and
// a changing lr: parameters after every step within 1e-12, and the moments
// after the last equal torch's optimizer state.
func TestAdamWGoldenFloat64(t *testing.T) {
	g := readGolden(t)
	params, opt := goldenAdamW(g, tensor.Float64)
	groups := opt.Groups()
	require.Equal(t, strings.Split(g.meta["adamw.decayed"], ","), groups[0].Params, "decayed group as in torch's param_groups")
	require.Equal(t, g.num("adamw.weight_decay"), groups[0].WeightDecay)

	lrs, _ := g.f64("adamw.lr")
	steps, _ := strconv.Atoi(g.meta["adamw.steps"])
	worst := 0.0
	for k := 1; k <= steps; k++ {
		require.NoError(t, opt.Step(g.stepGrads(params, k, tensor.Float64), lrs[k-1]))
		for _, p := range params {
			want, _ := g.f64("adamw.param." + strconv.Itoa(k) + "." + p.Name)
			worst = max(worst, requireClose(t, want, p.Value.Data().([]float64), 1e-12, "step "+strconv.Itoa(k)+" "+p.Name))
		}
	}
	t.Logf("largest scaled error against torch: %.2g", worst)

	data, err := opt.State()
	require.NoError(t, err)
	f, err := safetensors.Decode(data)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(steps), f.Metadata()["step"])
	for _, p := range params {
		for _, key := range []string{"exp_avg.", "exp_avg_sq."} {
			want, _ := g.f64("adamw." + key + p.Name)
			ts, ok := f.Tensor(key + p.Name)
			require.True(t, ok, key+p.Name)
			got, err := ts.Float64s()
			require.NoError(t, err)
			requireClose(t, want, got, 1e-12, key+p.Name)
		}
	}
}

// The same run in float32 against torch's float32 run.
func TestAdamWGoldenFloat32(t *testing.T) {
	g := readGolden(t)
	params, opt := goldenAdamW(g, tensor.Float32)
	lrs, _ := g.f64("adamw.lr")
	worst := 0.0
	for k := 1; k <= 5; k++ {
		require.NoError(t, opt.Step(g.stepGrads(params, k, tensor.Float32), lrs[k-1]))
		for _, p := range params {
			want, _ := g.f64("f32.param." + strconv.Itoa(k) + "." + p.Name)
			worst = max(worst, requireClose(t, want, p.Value.Data().([]float32), 1e-6, "step "+strconv.Itoa(k)+" "+p.Name))
		}
	}
	t.Logf("largest scaled error against torch float32: %.2g", worst)
}

// The golden run's learning rates are nanoGPT's schedule, which
// WarmupCosine reproduces; and DefaultAdamWConfig is torch's defaults.
func TestAdamWGoldenSettings(t *testing.T) {
	g := readGolden(t)
	require.Equal(t, "nanoGPT get_lr(it, lr=0.1, min_lr=0.01, warmup=2, decay=5)", g.meta["adamw.schedule"])
	s, err := WarmupCosine(0.1, 0.01, 2, 5)
	require.NoError(t, err)
	lrs, _ := g.f64("adamw.lr")
	got := make([]float64, len(lrs))
	for i := range lrs {
		got[i] = s.LR(i)
	}
	requireClose(t, lrs, got, 1e-15, "lr")

	d := DefaultAdamWConfig()
	require.Equal(t, g.num("torch_default.beta1"), d.Beta1)
	require.Equal(t, g.num("torch_default.beta2"), d.Beta2)
	require.Equal(t, g.num("torch_default.eps"), d.Eps)
	require.Equal(t, g.num("torch_default.weight_decay"), d.WeightDecay)
	require.NoError(t, d.Validate())
}

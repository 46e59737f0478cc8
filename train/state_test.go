package train

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
)

// Training 2N steps equals training N, saving model and optimizer,
// building both anew, loading, and training N more: identical bits, in
// float32 and float64, through files (Save/Load) and through memory
// (State/Restore), with the new optimizer listing the parameters in
// another order.
func TestResumeIsExact(t *testing.T) {
	const n = 4
	cfg := DefaultAdamWConfig()
	cfg.Beta2, cfg.WeightDecay = 0.95, 0.1
	sched, err := WarmupCosine(1e-2, 1e-3, 2, 2*n)
	require.NoError(t, err)
	train := func(opt *AdamW, params []*layers.Param, from, to int) {
		for s := from; s < to; s++ {
			require.NoError(t, opt.Step(randGrads(params, uint64(100+s)), sched.LR(s)))
		}
	}
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, viaFile := range []bool{true, false} {
			ref := tinyStore(t, dt, 3)
			refOpt, err := NewAdamW(ref.Params(), cfg)
			require.NoError(t, err)
			train(refOpt, ref.Params(), 0, 2*n)

			first := tinyStore(t, dt, 3)
			firstOpt, err := NewAdamW(first.Params(), cfg)
			require.NoError(t, err)
			train(firstOpt, first.Params(), 0, n)
			dir := t.TempDir()
			require.NoError(t, first.Save(filepath.Join(dir, "model.safetensors"), nil))
			var state []byte
			if viaFile {
				require.NoError(t, firstOpt.Save(filepath.Join(dir, StateFile)))
			} else {
				state, err = firstOpt.State()
				require.NoError(t, err)
			}

			second := tinyStore(t, dt, 99) // other initial values, replaced by Load
			require.NoError(t, second.Load(filepath.Join(dir, "model.safetensors")))
			reversed := slices.Clone(second.Params())
			slices.Reverse(reversed)
			secondOpt, err := NewAdamW(reversed, cfg)
			require.NoError(t, err)
			if viaFile {
				require.NoError(t, secondOpt.Load(filepath.Join(dir, StateFile)))
			} else {
				require.NoError(t, secondOpt.Restore(state))
			}
			require.Equal(t, n, secondOpt.Steps())
			for s := n; s < 2*n; s++ { // the same gradients, in the new order
				g := randGrads(second.Params(), uint64(100+s))
				slices.Reverse(g)
				require.NoError(t, secondOpt.Step(g, sched.LR(s)))
			}

			require.Equal(t, snapshot(ref.Params()), snapshot(second.Params()), "%v via file %v: parameters", dt, viaFile)
			require.Equal(t, moments(t, refOpt), moments(t, secondOpt), "%v via file %v: moments", dt, viaFile)
			require.Equal(t, 2*n, secondOpt.Steps())
			// The comparison can fail: one step fewer differs.
			require.NotEqual(t, moments(t, refOpt), moments(t, firstOpt))
		}
	}
}

// moments decodes an optimizer's state into name → raw bytes plus "step".
func moments(t *testing.T, o *AdamW) map[string]string {
	t.Helper()
	data, err := o.State()
	require.NoError(t, err)
	f, err := safetensors.Decode(data)
	require.NoError(t, err)
	out := map[string]string{"step": f.Metadata()["step"]}
	for _, name := range f.Names() {
		ts, _ := f.Tensor(name)
		out[name] = string(ts.DType) + string(ts.Data)
	}
	return out
}

// The saved file: torch's key names, the parameter's dtype and shape, the
// step and hyperparameters in the metadata.
func TestStateFile(t *testing.T) {
	s := tinyStore(t, tensor.Float32, 1)
	opt, err := NewAdamW(s.Params(), DefaultAdamWConfig())
	require.NoError(t, err)
	require.NoError(t, opt.Step(randGrads(s.Params(), 1), 1e-3))
	path := filepath.Join(t.TempDir(), StateFile)
	require.NoError(t, opt.Save(path))
	f, err := safetensors.ReadFile(path)
	require.NoError(t, err)
	var names []string
	for _, p := range s.Params() {
		names = append(names, "exp_avg."+p.Name, "exp_avg_sq."+p.Name)
		for _, prefix := range []string{"exp_avg.", "exp_avg_sq."} {
			ts, ok := f.Tensor(prefix + p.Name)
			require.True(t, ok)
			require.Equal(t, safetensors.F32, ts.DType)
			require.Equal(t, []int(p.Value.Shape()), ts.Shape)
		}
	}
	slices.Sort(names)
	require.Equal(t, names, f.Names())
	require.Equal(t, map[string]string{
		"format": "zoo-adamw-1", "step": "1", "beta1": "0.9", "beta2": "0.999", "eps": "1e-08", "weight_decay": "0.01",
	}, f.Metadata())
}

// A state that does not fit is a *StateError naming every missing,
// unexpected and mismatched parameter, and changes nothing.
func TestRestoreMismatch(t *testing.T) {
	param := func(name string, dt tensor.Dtype, shape ...int) *layers.Param {
		return &layers.Param{Name: name, Value: tensor.New(tensor.Of(dt), tensor.WithShape(shape...))}
	}
	saved, err := NewAdamW([]*layers.Param{
		param("a.weight", tensor.Float32, 2, 3),
		param("b.bias", tensor.Float32, 3),
		param("c.weight", tensor.Float32, 4, 2),
		param("e.weight", tensor.Float64, 2, 2),
		param("f.weight", tensor.Float32, 5),
	}, DefaultAdamWConfig())
	require.NoError(t, err)
	state, err := saved.State()
	require.NoError(t, err)

	params := []*layers.Param{
		param("a.weight", tensor.Float32, 2, 3),
		param("b.bias", tensor.Float32, 4),      // mis-shaped
		param("d.weight", tensor.Float32, 2, 2), // missing from the state
		param("e.weight", tensor.Float32, 2, 2), // dtype differs
		param("f.weight", tensor.Float32, 1, 5), // same size, other shape
	} // c.weight: unexpected
	opt, err := NewAdamW(params, DefaultAdamWConfig())
	require.NoError(t, err)
	require.NoError(t, opt.Step(randGrads(params, 1), 1e-3))
	before := moments(t, opt)

	err = opt.Restore(state)
	var se *StateError
	require.True(t, errors.As(err, &se), "%v", err)
	require.Equal(t, []string{"d.weight"}, se.Missing)
	require.Equal(t, []string{"c.weight"}, se.Unexpected)
	require.Equal(t, []string{
		"b.bias: state F32 [3], parameter float32 [4]",
		"e.weight: state F64 [2 2], parameter float32 [2 2]",
		"f.weight: state F32 [5], parameter float32 [1 5]",
	}, se.Mismatched)
	require.ErrorContains(t, err, "1 missing: d.weight; 1 unexpected: c.weight; 3 mismatched: b.bias")
	require.Equal(t, before, moments(t, opt), "a failed restore changed the state")

	// Through a file, the error names the path and is still a *StateError.
	path := filepath.Join(t.TempDir(), StateFile)
	require.NoError(t, saved.Save(path))
	err = opt.Load(path)
	require.True(t, errors.As(err, &se))
	require.ErrorContains(t, err, path)
	require.Equal(t, before, moments(t, opt))
}

// Files that are not an AdamW state are errors.
func TestRestoreBadFiles(t *testing.T) {
	p := &layers.Param{Name: "w", Value: tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(2))}
	opt, err := NewAdamW([]*layers.Param{p}, DefaultAdamWConfig())
	require.NoError(t, err)
	encode := func(meta map[string]string, m, v []float64) []byte {
		t.Helper()
		a, err := safetensors.FromFloat64s("exp_avg.w", []int{2}, m)
		require.NoError(t, err)
		b, err := safetensors.FromFloat64s("exp_avg_sq.w", []int{2}, v)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "x.safetensors")
		require.NoError(t, safetensors.WriteFile(path, []safetensors.Tensor{a, b}, meta))
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		return data
	}
	good := map[string]string{"format": "zoo-adamw-1", "step": "3"}
	require.NoError(t, opt.Restore(encode(good, []float64{1, 2}, []float64{3, 4})))
	require.Equal(t, 3, opt.Steps())

	for _, c := range []struct {
		what string
		data []byte
		msg  string
	}{
		{"garbage", []byte("not a safetensors file"), "safetensors"},
		{"model checkpoint", encode(map[string]string{"format": "pt"}, []float64{1, 2}, []float64{3, 4}), `format "pt", want "zoo-adamw-1"`},
		{"no step", encode(map[string]string{"format": "zoo-adamw-1"}, []float64{1, 2}, []float64{3, 4}), `step "" is not a count`},
		{"negative step", encode(map[string]string{"format": "zoo-adamw-1", "step": "-1"}, []float64{1, 2}, []float64{3, 4}), `step "-1"`},
		{"NaN moment", encode(good, []float64{1, nan()}, []float64{3, 4}), "w: exp_avg holds NaN or Inf"},
		{"negative v", encode(good, []float64{1, 2}, []float64{-3, 4}), "w: exp_avg_sq holds a negative value"},
	} {
		require.ErrorContains(t, opt.Restore(c.data), c.msg, c.what)
		require.Equal(t, 3, opt.Steps(), c.what)
	}
	require.ErrorContains(t, opt.Load(filepath.Join(t.TempDir(), "absent")), "no such file")
}

func nan() float64 { return math.NaN() }

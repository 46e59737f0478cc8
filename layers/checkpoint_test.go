package layers

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
)

type tinyConfig struct {
	HiddenSize int `json:"hidden_size"`
}

func tinyModel(t *testing.T, seed uint64, dt tensor.Dtype) *Store {
	s, err := NewStore(WithSeed(seed), WithDtype(dt))
	require.NoError(t, err)
	_, err = NewEncoderBlock(s.Root().Sub("encoder").Sub("layers").Index(0), BlockConfig{Dim: 4, Heads: 2, FFNDim: 8, Activation: "gelu", Norm: PreNorm, LayerNormEps: 1e-5, Bias: true})
	require.NoError(t, err)
	return s
}

func TestCheckpointRoundTrip(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		dir := filepath.Join(t.TempDir(), "ckpt")
		a, b := tinyModel(t, 1, dt), tinyModel(t, 2, dt)
		require.NotEqual(t, a.Params()[0].Value.Data(), b.Params()[0].Value.Data())
		require.NoError(t, SaveCheckpoint(dir, tinyConfig{HiddenSize: 4}, a, map[string]string{"step": "7"}))
		require.NoError(t, LoadCheckpoint(dir, b))
		for i, p := range a.Params() {
			require.Equal(t, p.Value.Data(), b.Params()[i].Value.Data(), p.Name)
		}
		var cfg tinyConfig
		require.NoError(t, ReadConfig(dir, &cfg))
		require.Equal(t, 4, cfg.HiddenSize)
		f, err := safetensors.ReadFile(filepath.Join(dir, WeightsFile))
		require.NoError(t, err)
		require.Equal(t, "pt", f.Metadata()["format"])
		require.Equal(t, "7", f.Metadata()["step"])
		require.Contains(t, f.Names(), "encoder.layers.0.self_attn.q_proj.weight")
	}
}

// A checkpoint saved in float64 loads into a float32 model and vice versa;
// F16 and BF16 files load too.
func TestCheckpointConvertsDtypes(t *testing.T) {
	dir := t.TempDir()
	a := tinyModel(t, 1, tensor.Float64)
	path := filepath.Join(dir, "m.safetensors")
	require.NoError(t, a.Save(path, nil))
	b := tinyModel(t, 2, tensor.Float32)
	require.NoError(t, b.Load(path))
	require.InDelta(t, a.Params()[0].Value.Data().([]float64)[3], float64(b.Params()[0].Value.Data().([]float32)[3]), 1e-7)

	// Half precision: every value 1.0 (F16 0x3C00, BF16 0x3F80).
	for _, c := range []struct {
		dt   safetensors.DType
		bits [2]byte
	}{{safetensors.F16, [2]byte{0x00, 0x3C}}, {safetensors.BF16, [2]byte{0x80, 0x3F}}} {
		var ts []safetensors.Tensor
		for _, p := range b.Params() {
			raw := make([]byte, 2*p.Value.Size())
			for i := 0; i < len(raw); i += 2 {
				raw[i], raw[i+1] = c.bits[0], c.bits[1]
			}
			ts = append(ts, safetensors.Tensor{Name: p.Name, DType: c.dt, Shape: p.Value.Shape(), Data: raw})
		}
		hp := filepath.Join(dir, string(c.dt)+".safetensors")
		require.NoError(t, safetensors.WriteFile(hp, ts, nil))
		require.NoError(t, b.Load(hp))
		require.Equal(t, float32(1), b.Params()[5].Value.Data().([]float32)[0])
	}
}

// Loading is strict and reports every problem at once, by name, and changes
// nothing when it fails.
func TestStrictLoadReportsEverything(t *testing.T) {
	a := tinyModel(t, 1, tensor.Float32)
	var ts []safetensors.Tensor
	for _, p := range a.Params() {
		switch p.Name {
		case "encoder.layers.0.fc1.bias": // missing
			continue
		case "encoder.layers.0.fc2.weight": // wrong shape
			st, err := safetensors.FromFloat32s(p.Name, []int{2, 2}, make([]float32, 4))
			require.NoError(t, err)
			ts = append(ts, st)
			continue
		}
		st, err := safetensors.FromFloat32s(p.Name, p.Value.Shape(), make([]float32, p.Value.Size()))
		require.NoError(t, err)
		ts = append(ts, st)
	}
	extra, err := safetensors.FromFloat32s("encoder.layers.0.attn.bias", []int{1}, []float32{0})
	require.NoError(t, err)
	ts = append(ts, extra)
	path := filepath.Join(t.TempDir(), "bad.safetensors")
	require.NoError(t, safetensors.WriteFile(path, ts, nil))

	before := append([]float32(nil), a.Params()[0].Value.Data().([]float32)...)
	err = a.Load(path)
	var le *LoadError
	require.True(t, errors.As(err, &le), "%v", err)
	require.Equal(t, []string{"encoder.layers.0.fc1.bias"}, le.Missing)
	require.Equal(t, []string{"encoder.layers.0.attn.bias"}, le.Unexpected)
	require.Len(t, le.Mismatched, 1)
	require.Contains(t, le.Mismatched[0], "encoder.layers.0.fc2.weight: file [2 2], model [4 8]")
	require.ErrorContains(t, err, "1 missing")
	require.Equal(t, before, a.Params()[0].Value.Data().([]float32), "a failed load changes nothing")
}

// A save that fails leaves the previous checkpoint intact; a corrupt file is
// an error, not a panic.
func TestCheckpointFailuresAreSafe(t *testing.T) {
	dir := t.TempDir()
	a := tinyModel(t, 1, tensor.Float32)
	require.NoError(t, SaveCheckpoint(dir, tinyConfig{HiddenSize: 4}, a, nil))
	good, err := os.ReadFile(filepath.Join(dir, WeightsFile))
	require.NoError(t, err)

	require.Error(t, SaveCheckpoint(dir, func() {}, a, nil), "an unencodable config fails before any write")
	after, err := os.ReadFile(filepath.Join(dir, WeightsFile))
	require.NoError(t, err)
	require.Equal(t, good, after)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "trunc.safetensors"), good[:len(good)/2], 0o644))
	require.Error(t, a.Load(filepath.Join(dir, "trunc.safetensors")))
	require.ErrorContains(t, a.Load(filepath.Join(dir, "absent.safetensors")), "absent.safetensors")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.NotContains(t, e.Name(), ".tmp", "no temporary files left behind")
	}
}

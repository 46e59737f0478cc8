package layers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// A buffer is saved and loaded with the parameters but is not learnable:
// it is not among Params, NumParams or a graph's Learnables.
func TestBuffers(t *testing.T) {
	newStore := func(seed uint64) (*Store, *Param) {
		s := tinyModel(t, seed, tensor.Float64)
		b, err := s.Root().Buffer("final_logits_bias", []int{1, 3}, Normal(1))
		require.NoError(t, err)
		return s, b
	}
	a, ab := newStore(1)
	n := len(a.Params())
	require.Equal(t, []*Param{ab}, a.Buffers())
	require.NotContains(t, a.Params(), ab)
	_, err := a.Root().Param("final_logits_bias", []int{3}, Constant(0))
	require.ErrorContains(t, err, "defined twice", "names are unique over parameters and buffers")
	require.Len(t, a.Params(), n)
	p, ok := a.Param("final_logits_bias")
	require.True(t, ok)
	require.Equal(t, ab, p)

	g := a.NewGraph()
	x := g.Input("x", 2, 2, 3)
	y, err := AddBias(g, x, ab)
	require.NoError(t, err)
	require.Empty(t, g.Learnables(), "a buffer is bound but not learnable")
	got := runRead(t, g, y)[0].(*tensor.Dense).Data().([]float64)
	want := ab.Value.Data().([]float64)
	for i, v := range got {
		require.Equal(t, want[i%3], v)
	}

	path := filepath.Join(t.TempDir(), "m.safetensors")
	require.NoError(t, a.Save(path, nil))
	b, bb := newStore(2)
	require.NotEqual(t, ab.Value.Data(), bb.Value.Data())
	require.NoError(t, b.Load(path))
	require.Equal(t, ab.Value.Data(), bb.Value.Data())

	// Without the buffer, the file is missing a tensor, unless the key map
	// calls it optional; then the buffer keeps its value.
	f, err := safetensors.ReadFile(path)
	require.NoError(t, err)
	var ts []safetensors.Tensor
	for _, name := range f.Names() {
		if name != "final_logits_bias" {
			st, _ := f.Tensor(name)
			ts = append(ts, st)
		}
	}
	lacking := filepath.Join(t.TempDir(), "lacking.safetensors")
	require.NoError(t, safetensors.WriteFile(lacking, ts, nil))
	c, cb := newStore(3)
	before := append([]float64(nil), cb.Value.Data().([]float64)...)
	var le *LoadError
	require.True(t, errors.As(c.Load(lacking), &le))
	require.Equal(t, []string{"final_logits_bias"}, le.Missing)
	require.NoError(t, c.LoadMapped(lacking, optionalBias{}))
	require.Equal(t, before, cb.Value.Data())
	require.Equal(t, a.Params()[0].Value.Data(), c.Params()[0].Value.Data())
}

// optionalBias is the identity key map with final_logits_bias optional;
// it reads "alias.*" keys as the parameter they name and skips
// "positions", which must be all zeros.
type optionalBias struct{}

func (optionalBias) FromFile(key string) (string, bool, bool) {
	if key == "positions" {
		return "", false, true
	}
	if name, ok := strings.CutPrefix(key, "alias."); ok {
		return name, false, false
	}
	return key, false, false
}
func (optionalBias) ToFile(name string) (string, bool) { return name, false }
func (optionalBias) Optional(name string) bool         { return name == "final_logits_bias" }
func (optionalBias) CheckSkipped(key string, shape []int, v []float64) error {
	for _, x := range v {
		if x != 0 {
			return fmt.Errorf("positions %v are not zero", shape)
		}
	}
	return nil
}

// Several keys may load one parameter (a tied weight saved under each of
// its names) if they agree; a skipped tensor is checked by the key map.
func TestAliasedAndCheckedKeys(t *testing.T) {
	a := tinyModel(t, 1, tensor.Float32)
	q := a.Params()[0]
	write := func(aliasValue float32, positions float32) string {
		var ts []safetensors.Tensor
		for _, p := range a.Params() {
			st, err := safetensors.FromFloat32s(p.Name, p.Value.Shape(), p.Value.Data().([]float32))
			require.NoError(t, err)
			ts = append(ts, st)
		}
		al := append([]float32(nil), q.Value.Data().([]float32)...)
		al[5] = aliasValue
		st, err := safetensors.FromFloat32s("alias."+q.Name, q.Value.Shape(), al)
		require.NoError(t, err)
		pos, err := safetensors.FromFloat32s("positions", []int{2, 2}, []float32{0, 0, positions, 0})
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "m.safetensors")
		require.NoError(t, safetensors.WriteFile(path, append(ts, st, pos), nil))
		return path
	}
	same := q.Value.Data().([]float32)[5]
	require.NoError(t, a.LoadMapped(write(same, 0), optionalBias{}))

	err := a.LoadMapped(write(same+1, 0.5), optionalBias{})
	var le *LoadError
	require.True(t, errors.As(err, &le), "%v", err)
	require.Len(t, le.Mismatched, 2)
	require.Contains(t, le.Mismatched[0], "alias."+q.Name)
	require.Contains(t, le.Mismatched[0], ", both loaded into "+q.Name+", differ (first at flat index 5")
	require.Equal(t, "positions: positions [2 2] are not zero", le.Mismatched[1])
}

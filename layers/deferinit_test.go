package layers

import (
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/safetensors"
)

// deferModel is tinyModel with a buffer, a Reinit and a head after the
// block, each drawing from the generator, with opts (DeferInit or not).
func deferModel(t *testing.T, seed uint64, dt tensor.Dtype, opts ...Option) (*Store, *Param) {
	t.Helper()
	s, err := NewStore(append([]Option{WithSeed(seed), WithDtype(dt)}, opts...)...)
	require.NoError(t, err)
	_, err = NewEncoderBlock(s.Root().Sub("encoder").Sub("layers").Index(0), BlockConfig{Dim: 4, Heads: 2, FFNDim: 8, Activation: "gelu", Norm: PreNorm, LayerNormEps: 1e-5, Bias: true})
	require.NoError(t, err)
	_, err = s.Root().Buffer("final_logits_bias", []int{1, 3}, Normal(1))
	require.NoError(t, err)
	s.Reinit(s.Params()[1], Uniform(0.5))
	head, err := s.Root().Param("head", []int{3, 4}, Normal(0.3))
	require.NoError(t, err)
	return s, head
}

// values is every tensor of s by name, widened to float64.
func values(s *Store) map[string][]float64 {
	out := map[string][]float64{}
	for _, p := range s.all() {
		switch d := p.Value.Data().(type) {
		case []float32:
			v := make([]float64, len(d))
			for i, x := range d {
				v[i] = float64(x)
			}
			out[p.Name] = v
		case []float64:
			out[p.Name] = append([]float64(nil), d...)
		}
	}
	return out
}

// A DeferInit store loaded from a checkpoint holds what a store without
// it holds, bit for bit: the file's tensors, and for those the file lacks
// (an optional buffer, a head) the initial values they would have had;
// the generator then continues where it would have. Without a load, a
// graph or a save sees the initial values, never zeros.
func TestDeferInitBitIdentical(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		src, _ := deferModel(t, 7, dt)
		// The checkpoint lacks the buffer and the head.
		var ts []safetensors.Tensor
		for _, p := range src.Params() {
			if p.Name == "head" {
				continue
			}
			x, err := toTensor(p.Name, p.Value, false)
			require.NoError(t, err)
			ts = append(ts, x)
		}
		path := filepath.Join(t.TempDir(), "m.safetensors")
		require.NoError(t, safetensors.WriteFile(path, ts, nil))
		km := optionalHead{}

		want, _ := deferModel(t, 1, dt)
		require.NoError(t, want.LoadMapped(path, km))
		got, head := deferModel(t, 1, dt, DeferInit())
		require.Equal(t, 0.0, sumAbs(values(got)["head"]), "deferred: zeros until loaded")
		require.NoError(t, got.LoadMapped(path, km))
		require.Equal(t, bits(values(want)), bits(values(got)), "%v", dt)
		require.NotZero(t, sumAbs(values(got)["head"]), head.Name)

		// The generator continues as it would have.
		a, err := want.Root().Param("later", []int{5}, Normal(1))
		require.NoError(t, err)
		b, err := got.Root().Param("later", []int{5}, Normal(1))
		require.NoError(t, err)
		require.Equal(t, a.Value.Data(), b.Value.Data())

		// A failed load leaves the store deferred; a graph sees the
		// initial values.
		plain, _ := deferModel(t, 3, dt)
		deferred, _ := deferModel(t, 3, dt, DeferInit())
		var le *LoadError
		require.True(t, errors.As(deferred.Load(path), &le))
		deferred.NewGraph()
		require.Equal(t, bits(values(plain)), bits(values(deferred)))
	}
}

// optionalHead reads the identity keys, with the buffer and the head
// optional.
type optionalHead struct{}

func (optionalHead) FromFile(key string) (string, bool, bool) { return key, false, false }
func (optionalHead) ToFile(name string) (string, bool)        { return name, false }
func (optionalHead) Optional(name string) bool {
	return name == "head" || name == "final_logits_bias"
}

func sumAbs(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += math.Abs(x)
	}
	return s
}

func bits(m map[string][]float64) map[string][]uint64 {
	out := map[string][]uint64{}
	for k, v := range m {
		for _, x := range v {
			out[k] = append(out[k], math.Float64bits(x))
		}
	}
	return out
}

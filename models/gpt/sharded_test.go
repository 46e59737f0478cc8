package gpt

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
)

// toBF16 is x in bfloat16 (its float32 bits' top half: truncated).
func toBF16(t *testing.T, x safetensors.Tensor) safetensors.Tensor {
	t.Helper()
	v, err := x.Float32s()
	require.NoError(t, err)
	data := make([]byte, 2*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint16(data[2*i:], uint16(math.Float32bits(f)>>16))
	}
	return safetensors.Tensor{Name: x.Name, DType: safetensors.BF16, Shape: x.Shape, Data: data}
}

// A GPT-2 checkpoint saved sharded, as Hugging Face saves large models
// (model.safetensors.index.json and its shards, one of them bfloat16),
// loads through Load into the weights of the same tensors in one file.
func TestLoadSharded(t *testing.T) {
	ref, err := safetensors.ReadFile(filepath.Join(parityDir, layers.WeightsFile))
	require.NoError(t, err)
	cfg, err := os.ReadFile(filepath.Join(parityDir, layers.ConfigFile))
	require.NoError(t, err)
	one, sharded := t.TempDir(), t.TempDir()
	var all, s1, s2 []safetensors.Tensor
	weightMap := map[string]string{}
	for i, n := range ref.Names() {
		x, _ := ref.Tensor(n)
		if i%2 == 1 {
			x = toBF16(t, x)
			s2 = append(s2, x)
			weightMap[n] = "model-00002-of-00002.safetensors"
		} else {
			s1 = append(s1, x)
			weightMap[n] = "model-00001-of-00002.safetensors"
		}
		all = append(all, x)
	}
	require.NoError(t, safetensors.WriteFile(filepath.Join(one, layers.WeightsFile), all, nil))
	require.NoError(t, safetensors.WriteFile(filepath.Join(sharded, "model-00001-of-00002.safetensors"), s1, nil))
	require.NoError(t, safetensors.WriteFile(filepath.Join(sharded, "model-00002-of-00002.safetensors"), s2, nil))
	idx, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 0}, "weight_map": weightMap})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(sharded, "model.safetensors.index.json"), idx, 0o644))
	for _, d := range []string{one, sharded} {
		require.NoError(t, os.WriteFile(filepath.Join(d, layers.ConfigFile), cfg, 0o644))
	}

	a, _, err := Load(one)
	require.NoError(t, err)
	b, _, err := Load(sharded)
	require.NoError(t, err)
	p, _, err := Load(parityDir)
	require.NoError(t, err)
	changed := 0
	for i, q := range a.Store.Params() {
		require.Equal(t, q.Value.Data(), b.Store.Params()[i].Value.Data(), q.Name)
		if !equalData(q.Value.Data(), p.Store.Params()[i].Value.Data()) {
			changed++
		}
	}
	require.NotZero(t, changed, "the bfloat16 shard's tensors were rounded")

	// A shard missing is an error naming it, from Load.
	require.NoError(t, os.Remove(filepath.Join(sharded, "model-00002-of-00002.safetensors")))
	_, _, err = Load(sharded)
	require.ErrorContains(t, err, "shard model-00002-of-00002.safetensors is missing")
}

func equalData(a, b any) bool {
	x, y := a.([]float32), b.([]float32)
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/safetensors"
)

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(nil, &out, &errb))
	for _, c := range commands {
		require.Contains(t, out.String(), c.name)
	}
}

func TestUnknownAndUnbuiltCommands(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 2, run([]string{"dance"}, &out, &errb))
	require.Contains(t, errb.String(), `unknown command "dance"`)
	errb.Reset()
	require.Equal(t, 2, run([]string{"eval"}, &out, &errb))
	require.Contains(t, errb.String(), "one of --corpus or --labelled")
	errb.Reset()
	require.Equal(t, 2, run([]string{"finetune", "gpt"}, &out, &errb))
	require.Contains(t, errb.String(), "--init-from is required") // was --checkpoint, still accepted with a deprecation line
	errb.Reset()
	require.Equal(t, 2, run([]string{"pretrain"}, &out, &errb))
	require.Contains(t, errb.String(), "needs a model family: gpt")
}

func TestInspect(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	w, err := safetensors.FromFloat32s("transformer.wte.weight", []int{3, 2}, make([]float32, 6))
	require.NoError(t, err)
	require.NoError(t, safetensors.WriteFile(path, []safetensors.Tensor{w}, map[string]string{"format": "pt"}))
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"inspect", path}, &out, &errb), errb.String())
	require.Contains(t, out.String(), "transformer.wte.weight")
	require.Contains(t, out.String(), "[3 2]")
	require.Contains(t, out.String(), "metadata format = pt")
	require.Contains(t, out.String(), "1 tensors, 6 values")

	bad := filepath.Join(t.TempDir(), "bad.safetensors")
	require.NoError(t, os.WriteFile(bad, []byte("not a checkpoint"), 0o644))
	errb.Reset()
	require.Equal(t, 1, run([]string{"inspect", bad}, &out, &errb))
	require.Contains(t, errb.String(), "zoo inspect: safetensors")
	errb.Reset()
	require.Equal(t, 2, run([]string{"inspect"}, &out, &errb))
	require.Contains(t, errb.String(), "usage: zoo inspect")
}

// A sharded checkpoint (model.safetensors.index.json and its shards) is
// inspected as one: by its directory, its index or its one-file name.
func TestInspectSharded(t *testing.T) {
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join("..", "..", "models", "gpt", "testdata", "parity", "config.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))
	for i, name := range []string{"a.weight", "b.weight"} {
		x, err := safetensors.FromFloat32s(name, []int{2, 2}, make([]float32, 4))
		require.NoError(t, err)
		require.NoError(t, safetensors.WriteFile(filepath.Join(dir, fmt.Sprintf("model-%05d-of-00002.safetensors", i+1)), []safetensors.Tensor{x}, map[string]string{"format": "pt"}))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"),
		[]byte(`{"metadata":{"total_size":32},"weight_map":{"a.weight":"model-00001-of-00002.safetensors","b.weight":"model-00002-of-00002.safetensors"}}`), 0o644))
	for _, arg := range []string{dir, filepath.Join(dir, "model.safetensors.index.json"), filepath.Join(dir, "model.safetensors")} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run([]string{"inspect", arg}, &out, &errb), errb.String())
		require.Contains(t, out.String(), "a.weight", arg)
		require.Contains(t, out.String(), "b.weight", arg)
		require.Contains(t, out.String(), "2 tensors, 8 values", arg)
	}
}

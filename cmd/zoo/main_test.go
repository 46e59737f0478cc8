package main

import (
	"bytes"
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

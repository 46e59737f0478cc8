package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/llama"
)

// zoo inspect knows the LLaMA family (llama, qwen2, mistral), whose only
// other command so far is zoo predict.
func TestInspectLlama(t *testing.T) {
	m, err := llama.NewForCausalLM(llama.TinyQwen2(), layers.WithSeed(1))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "qwen2")
	require.NoError(t, m.Save(dir))
	var out, errb bytes.Buffer
	code := run([]string{"inspect", dir}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "llama")
	require.Contains(t, out.String(), "model.layers.0.self_attn.q_proj.bias")
}

// zoo eval scores a LLaMA checkpoint (the family has an eval command
// since it trains; TestLlamaPretrainFinetuneGenerate scores one); one
// without its tokenizer is refused, naming the file.
func TestEvalLlamaNeedsTokenizer(t *testing.T) {
	m, err := llama.NewForCausalLM(llama.Tiny(), layers.WithSeed(1))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "llama")
	require.NoError(t, m.Save(dir))
	var out, errb bytes.Buffer
	code := run([]string{"eval", "--checkpoint", dir, "--corpus", "x"}, &out, &errb)
	require.NotEqual(t, 0, code)
	require.Contains(t, errb.String(), "has no tokenizer.json")
}

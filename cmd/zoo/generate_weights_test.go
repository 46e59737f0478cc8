package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
)

// zoo generate --weights bf16|int8 decodes with the library's model in
// that format; an unknown format is a usage error, and a GPT checkpoint
// refuses a reduced one by name.
func TestGenerateWeights(t *testing.T) {
	ctx := context.Background()
	dir := llamaCheckpoints(t)["LlamaForCausalLM"]
	sample := func(p *llama.TextGeneration) string {
		cfg := p.Defaults()
		cfg.MaxNewTokens, cfg.Temperature, cfg.Seed = 24, 1, 5
		got, err := p.Generate(ctx, []string{"the cat"}, cfg)
		require.NoError(t, err)
		return got[0].Text
	}
	f32, err := llama.LoadTextGeneration(dir)
	require.NoError(t, err)
	plain := sample(f32)
	for _, f := range []models.WeightFormat{models.WeightsBF16, models.WeightsInt8} {
		p, err := llama.LoadTextGeneration(dir, models.WithWeightFormat(f))
		require.NoError(t, err)
		require.Equal(t, f, p.Model.WeightFormat())
		want := sample(p)
		code, out, errs := zoo(t, "generate", "--checkpoint", dir, "--prompt", "the cat", "--weights", string(f),
			"--max-new-tokens", "24", "--temperature", "1", "--seed", "5")
		require.Equal(t, 0, code, errs)
		require.Equal(t, want+"\n", out)
		if f == models.WeightsInt8 { // the flag reaches the model: these samples differ from float32's
			require.NotEqual(t, plain, want)
		}
	}
	code, _, errs := zoo(t, "generate", "--checkpoint", dir, "--weights", "int4")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, `--weights: weight format "int4": want f32, bf16 or int8`)
	code, _, errs = zoo(t, "generate", "--checkpoint", gptCheckpoint(t), "--weights", "int8")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "weights in int8 are implemented for the llama family's causal LM only")
}

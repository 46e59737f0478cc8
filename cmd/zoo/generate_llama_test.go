package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
)

// zoo generate on a LLaMA-family checkpoint (llama, qwen2, mistral)
// streams what the library's llama.TextGeneration.Generate returns for
// the same settings: the checkpoint's (4 greedy tokens), sampling flags,
// beam search flags, and a stop string.
func TestGenerateLlama(t *testing.T) {
	ctx := context.Background()
	dirs := llamaCheckpoints(t)
	for _, prefix := range []string{"Llama", "Qwen2", "Mistral"} {
		dir := dirs[prefix+"ForCausalLM"]
		p, err := llama.LoadTextGeneration(dir)
		require.NoError(t, err)
		greedy, err := p.Generate(ctx, []string{"the cat"}, p.Defaults())
		require.NoError(t, err)
		require.Len(t, greedy[0].Tokens, 4, "generation_config.json's max_new_tokens")
		cont := strings.TrimPrefix(greedy[0].Text, "the cat")
		require.NotEmpty(t, strings.TrimSpace(cont))
		stop := strings.TrimSpace(cont)[:1] // the continuation's first letter: its token ends the text
		for _, c := range []struct {
			name  string
			flags []string
			set   func(*models.TextGenerationConfig)
		}{
			{"checkpoint's", nil, func(*models.TextGenerationConfig) {}},
			{"sampling", []string{"--max-new-tokens", "6", "--temperature", "0.9", "--top-k", "20", "--top-p", "0.95", "--seed", "3"},
				func(c *models.TextGenerationConfig) {
					c.MaxNewTokens, c.Temperature, c.TopK, c.TopP, c.Seed = 6, 0.9, 20, 0.95, 3
				}},
			{"beam", []string{"--beam", "3", "--max-new-tokens", "5", "--length-penalty", "0.5", "--early-stopping", "never"},
				func(c *models.TextGenerationConfig) {
					c.Beam, c.MaxNewTokens, c.LengthPenalty, c.LengthPenaltyStyle, c.EarlyStopping = 3, 5, 0.5, decode.GNMTPenalty, decode.StopNever
				}},
			{"stop string", []string{"--stop", stop, "--max-new-tokens", "8"},
				func(c *models.TextGenerationConfig) { c.StopStrings, c.MaxNewTokens = []string{stop}, 8 }},
		} {
			t.Run(prefix+"/"+c.name, func(t *testing.T) {
				cfg := p.Defaults()
				c.set(&cfg)
				want, err := p.Generate(ctx, []string{"the cat"}, cfg)
				require.NoError(t, err)
				code, out, errs := zoo(t, append([]string{"generate", "--checkpoint", dir, "--prompt", "the cat"}, c.flags...)...)
				require.Equal(t, 0, code, errs)
				require.Equal(t, want[0].Text+"\n", out)
				if c.name == "stop string" {
					require.Contains(t, strings.TrimPrefix(want[0].Text, "the cat"), stop)
					require.Less(t, len(want[0].Tokens), 8, "the token holding the stop string ends the text")
				}
			})
		}
	}
}

// zoo generate refuses, by flag, what a LLaMA-family checkpoint cannot
// do, and a --max-new-tokens over llama.MaxNewTokensLimit before loading.
func TestGenerateLlamaRefuses(t *testing.T) {
	dir := llamaCheckpoints(t)["LlamaForCausalLM"]
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--max-new-tokens", "1048577"}, "--max-new-tokens 1048577 must be between 1 and 1048576 (llama.MaxNewTokensLimit)"},
		{[]string{"--max-new-tokens", "0"}, "--max-new-tokens 0 must be between 1"},
		{[]string{"--beam", "2", "--nbest", "2"}, "--nbest 2: a LLaMA-family checkpoint prints the best continuation only"},
		{[]string{"--no-cache"}, "--no-cache: a LLaMA-family checkpoint always decodes with the KV cache"},
		{[]string{"--stop", ""}, "a stop string must not be empty"},
		{[]string{"--early-stopping", "maybe"}, "--early-stopping"},
	} {
		code, out, errs := zoo(t, append([]string{"generate", "--checkpoint", dir}, c.flags...)...)
		require.NotEqual(t, 0, code, out)
		require.Contains(t, errs, c.want)
	}
}

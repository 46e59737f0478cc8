package main

import (
	"context"
	"fmt"
	"path/filepath"
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
		{[]string{"--nbest", "2", "--beam", "1"}, "need 1 ≤ nbest ≤ beam"},
		{[]string{"--repetition-penalty", "0"}, "--repetition-penalty 0 must be a positive number"},
		{[]string{"--system", "be brief"}, "--system and --messages give a conversation: add --chat"},
		{[]string{"--chat"}, "--chat needs the user's turn (--prompt) or a conversation (--messages FILE)"},
		{[]string{"--chat", "--prompt", "hi"}, "no chat template"},
		{[]string{"--chat", "--messages", "/no/such/file.json"}, "--messages"},
		{[]string{"--stop", ""}, "a stop string must not be empty"},
		{[]string{"--early-stopping", "maybe"}, "--early-stopping"},
	} {
		code, out, errs := zoo(t, append([]string{"generate", "--checkpoint", dir}, c.flags...)...)
		require.NotEqual(t, 0, code, out)
		require.Contains(t, errs, c.want)
	}
}

// zoo generate --nbest N prints the N best continuations of beam search
// with their scores, as llama.TextGeneration.NBest returns them; --no-cache
// decodes the same tokens as the KV cache (greedy and beam search); and
// --repetition-penalty is the library's RepetitionPenalty.
func TestGenerateLlamaNBestNoCachePenalty(t *testing.T) {
	ctx := context.Background()
	dir := llamaCheckpoints(t)["Qwen2ForCausalLM"]
	p, err := llama.LoadTextGeneration(dir)
	require.NoError(t, err)
	cfg := p.Defaults()
	cfg.Beam, cfg.MaxNewTokens = 3, 5
	ids, err := p.PromptIDs("the cat")
	require.NoError(t, err)
	hyps, err := p.NBest(ctx, ids, cfg, 3)
	require.NoError(t, err)
	require.Len(t, hyps, 3)
	var want strings.Builder
	for _, h := range hyps {
		text, err := p.Tokenizer.Decode(h.Tokens)
		require.NoError(t, err)
		fmt.Fprintf(&want, "%.4f\tthe cat%s\n", h.Score, text)
	}
	require.GreaterOrEqual(t, hyps[0].Score, hyps[2].Score)
	code, out, errs := zoo(t, "generate", "--checkpoint", dir, "--prompt", "the cat", "--beam", "3", "--nbest", "3", "--max-new-tokens", "5")
	require.Equal(t, 0, code, errs)
	require.Equal(t, want.String(), out)
	code, uncached, errs := zoo(t, "generate", "--checkpoint", dir, "--prompt", "the cat", "--beam", "3", "--nbest", "3", "--max-new-tokens", "5", "--no-cache")
	require.Equal(t, 0, code, errs)
	require.Equal(t, out, uncached, "--no-cache: the same hypotheses")

	flags := []string{"generate", "--checkpoint", dir, "--prompt", "the cat", "--max-new-tokens", "10", "--temperature", "0"}
	_, cached, _ := zoo(t, flags...)
	code, uncached, errs = zoo(t, append(flags, "--no-cache")...)
	require.Equal(t, 0, code, errs)
	require.Equal(t, cached, uncached, "--no-cache: the same greedy tokens")

	cfg = p.Defaults()
	cfg.MaxNewTokens, cfg.Temperature, cfg.NewTextOnly = 10, 0, true
	cfg.RepetitionPenalty = 0.05
	pen, err := p.Generate(ctx, []string{"the cat"}, cfg)
	require.NoError(t, err)
	code, out, errs = zoo(t, append(flags, "--repetition-penalty", "0.05")...)
	require.Equal(t, 0, code, errs)
	require.Equal(t, "the cat"+pen[0].Text+"\n", out)
	require.NotEqual(t, cached, out, "a penalty of 0.05 (favouring repeats) changes the greedy text")
}

// chatTemplate is a Llama-2-like chat template over the test tokenizer's
// <s> and </s>: it writes bos_token itself.
const chatTemplate = `{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content | trim }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}`

// zoo generate --chat renders the conversation with the checkpoint's chat
// template (bos written once, by the template) and streams the answer
// that llama.TextGeneration.Chat returns; --messages reads the
// conversation from a JSON file.
func TestGenerateLlamaChat(t *testing.T) {
	ctx := context.Background()
	d := t.TempDir()
	dir := withJSON(t, llamaCheckpoints(t)["LlamaForCausalLM"], d, "tokenizer_config.json",
		map[string]any{"chat_template": chatTemplate, "bos_token": "<s>", "eos_token": map[string]any{"content": "</s>"}})
	p, err := llama.LoadTextGeneration(dir)
	require.NoError(t, err)
	require.NotNil(t, p.ChatTemplate)
	msgs := []models.ChatMessage{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "the cat"}}
	text, ids, err := p.ChatPrompt(ctx, msgs)
	require.NoError(t, err)
	require.Equal(t, "<s>[system] Be brief.</s>[user] the cat</s>[assistant]", text)
	bos := *p.Model.Config.BOSTokenID
	require.Equal(t, bos, ids[0])
	require.NotEqual(t, bos, ids[1], "bos once: the template writes it and tokenizing adds none")
	require.Contains(t, ids, 2, "</s> is its special token")

	cfg := p.Defaults()
	cfg.MaxNewTokens = 6
	want, err := p.Chat(ctx, msgs, cfg)
	require.NoError(t, err)
	require.NotEmpty(t, want.Tokens)
	code, out, errs := zoo(t, "generate", "--checkpoint", dir, "--chat", "--system", "Be brief.", "--prompt", "the cat", "--max-new-tokens", "6")
	require.Equal(t, 0, code, errs)
	require.Equal(t, want.Text+"\n", out)

	file := filepath.Join(d, "conv.json")
	write(t, file, `[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "the cat"}]`)
	code, out2, errs := zoo(t, "generate", "--checkpoint", dir, "--chat", "--messages", file, "--max-new-tokens", "6")
	require.Equal(t, 0, code, errs)
	require.Equal(t, out, out2)

	code, _, errs = zoo(t, "generate", "--checkpoint", dir, "--chat", "--messages", file, "--system", "x")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "put the system turn in the file")
	write(t, file, `[{"content": "no role"}]`)
	code, _, errs = zoo(t, "generate", "--checkpoint", dir, "--chat", "--messages", file)
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "message 0 has no role")

	code, _, errs = zoo(t, "generate", "--checkpoint", llamaCheckpoints(t)["LlamaForCausalLM"], "--chat", "--prompt", "hi")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "no chat template")
	require.Contains(t, errs, "base model")
}

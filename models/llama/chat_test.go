package llama

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// chatCheckpoint saves a tiny LLaMA with the test tokenizer and, unless
// config is "", that tokenizer_config.json.
func chatCheckpoint(t *testing.T, config string) string {
	t.Helper()
	dir := t.TempDir()
	c := Tiny()
	one, two := 1, 2
	c.VocabSize, c.BOSTokenID, c.EOSTokenID = 2350, &one, IDs(two)
	m, err := NewForCausalLM(c, layers.WithSeed(5), layers.WithInitStd(0.3))
	require.NoError(t, err)
	require.NoError(t, m.Save(dir))
	tok, err := os.ReadFile(filepath.Join("..", "..", "datasets", "testdata", "llama_bpe.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644))
	if config != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, models.TokenizerConfigFile), []byte(config), 0o644))
	}
	return dir
}

// Chat without a template, or with one the zoo cannot render, is an error
// naming why, while Generate still works; Chat's answer is Generate's
// continuation of the rendered text's ids.
func TestChat(t *testing.T) {
	ctx := context.Background()
	msgs := []models.ChatMessage{{Role: "user", Content: "Hello"}}
	for _, c := range []struct{ name, config, err string }{
		{"base model", "", "no chat template"},
		{"no template", `{"bos_token": "<s>"}`, "no chat template"},
		{"recursive", `{"chat_template": "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"}`, "f refers to itself"},
		{"refused", `{"chat_template": "{{ raise_exception('only system first') }}"}`, "only system first"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := LoadTextGeneration(chatCheckpoint(t, c.config))
			require.NoError(t, err, "a template is read for Chat only")
			cfg := p.Defaults()
			cfg.MaxNewTokens = 2
			_, err = p.Chat(ctx, msgs, cfg)
			require.ErrorContains(t, err, c.err)
			_, err = p.Generate(ctx, []string{"Hello"}, cfg)
			require.NoError(t, err)
		})
	}

	p, err := LoadTextGeneration(chatCheckpoint(t, `{"bos_token": "<s>", "chat_template": "{{ bos_token }}{{ messages[0].content }}"}`))
	require.NoError(t, err)
	cfg := p.Defaults()
	cfg.MaxNewTokens, cfg.Temperature = 4, 0
	got, err := p.Chat(ctx, msgs, cfg)
	require.NoError(t, err)
	want, err := p.Generate(ctx, []string{"Hello"}, cfg) // the tokenizer's template adds <s> to "Hello": the same ids
	require.NoError(t, err)
	require.Equal(t, want[0].Tokens, got.Tokens)
	_, err = p.Chat(ctx, msgs, TextGenerationConfig{})
	require.ErrorContains(t, err, "max_new_tokens 0 and max_length 0")
}

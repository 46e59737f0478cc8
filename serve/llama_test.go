package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
)

// tinyLlama writes a tiny Llama language model and classifier with the
// test BPE, the model with a chat template.
func tinyLlama(t testing.TB) (lm, clf string) {
	tok, err := os.ReadFile("../datasets/testdata/llama_bpe.json")
	require.NoError(t, err)
	c := llama.Tiny()
	c.VocabSize = 2350
	m, err := llama.NewForCausalLM(c, layers.WithSeed(5), layers.WithInitStd(0.3))
	require.NoError(t, err)
	lm = filepath.Join(t.TempDir(), "llama")
	require.NoError(t, m.Save(lm))
	for name, text := range map[string]string{
		"generation_config.json": `{"do_sample": false, "max_new_tokens": 4}`,
		"tokenizer.json":         string(tok),
		"tokenizer_config.json":  `{"bos_token": "<s>", "chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}[assistant]"}`,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(lm, name), []byte(text), 0o644))
	}
	cm, err := llama.NewForSequenceClassification(c, []string{"neg", "neu", "pos"}, layers.WithSeed(6), layers.WithInitStd(0.3))
	require.NoError(t, err)
	clf = filepath.Join(t.TempDir(), "llama-clf")
	require.NoError(t, cm.Save(clf))
	require.NoError(t, os.WriteFile(filepath.Join(clf, "tokenizer.json"), tok, 0o644))
	return lm, clf
}

// TestLlama: a LLaMA-family checkpoint's generation, chat (llama.Chat,
// its template) and classification through the server are the library's.
func TestLlama(t *testing.T) {
	ctx := context.Background()
	lm, clf := tinyLlama(t)
	_, url := startServer(t, map[string]string{"llama": lm, "llama-clf": clf}, Config{})
	p, err := llama.LoadTextGeneration(lm)
	require.NoError(t, err)

	cfg := p.Defaults()
	want, err := p.Generate(ctx, []string{"the cat"}, cfg)
	require.NoError(t, err)
	code, body, _ := post(t, url+"/models/llama", `{"inputs": "the cat"}`)
	require.Equal(t, http.StatusOK, code, string(body))
	require.JSONEq(t, mustJSON(t, want), string(body))

	msgs := []models.ChatMessage{{Role: "user", Content: "hello there"}}
	cfg.MaxNewTokens = 6
	wantChat, err := p.Chat(ctx, msgs, cfg)
	require.NoError(t, err)
	_, ids, err := p.ChatPrompt(ctx, msgs)
	require.NoError(t, err)
	for _, stream := range []bool{false, true} {
		req := `{"model": "llama", "messages": [{"role": "user", "content": "hello there"}], "max_tokens": 6`
		if !stream {
			code, body, _ := post(t, url+"/v1/chat/completions", req+"}")
			require.Equal(t, http.StatusOK, code, string(body))
			var c chatCompletion
			require.NoError(t, json.Unmarshal(body, &c))
			require.Equal(t, wantChat.Text, c.Choices[0].Message.Content)
			require.Equal(t, len(ids), c.Usage.PromptTokens)
			require.Equal(t, len(wantChat.Tokens), c.Usage.CompletionTokens)
			continue
		}
		resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(req+`, "stream": true}`))
		require.NoError(t, err)
		ev := sseEvents(t, resp.Body)
		resp.Body.Close()
		var text strings.Builder
		for _, e := range ev[:len(ev)-1] {
			var c chatCompletion
			require.NoError(t, json.Unmarshal([]byte(e), &c))
			text.WriteString(c.Choices[0].Delta.Content)
		}
		require.Equal(t, wantChat.Text, text.String())
	}

	pc, err := llama.LoadTextClassification(clf)
	require.NoError(t, err)
	pc.TopK = 3
	labels, err := pc.Predict(ctx, []string{"the cat sat", "a dog"})
	require.NoError(t, err)
	code, body, _ = post(t, url+"/models/llama-clf", `{"inputs": ["the cat sat", "a dog"], "parameters": {"top_k": 3}}`)
	require.Equal(t, http.StatusOK, code, string(body))
	require.JSONEq(t, mustJSON(t, labels), string(body))
}

package serve

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/models/gpt"
)

// TestOpenAINodeClient runs the official openai npm client
// (tools/openai/client.mjs) against a live server: models, completions,
// chat, both streamed, embeddings (base64, the client's default, and
// float) and an error, each checked against the library. It skips, saying
// so, where node or the package is missing: (cd tools/openai && npm ci).
func TestOpenAINodeClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: apt-get install nodejs npm, then (cd tools/openai && npm ci)")
	}
	dir := filepath.Join("..", "tools", "openai")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		t.Skip("the openai npm package is not installed: (cd tools/openai && npm ci)")
	}
	ctx := context.Background()
	dirs := testCheckpoints(t)
	_, url := startServer(t, map[string]string{"gpt": dirs["gpt"], "feat": dirs["feat"]}, Config{APIKeys: []string{"test-key"}})
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, node, "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ZOO_URL="+url, "ZOO_KEY=test-key")
	b, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("node client.mjs: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var got struct {
		Models     []string
		Completion struct {
			Text, Finish string
			Usage        usage
		}
		CompletionStream string
		Chat             struct{ Content, Role, Finish string }
		ChatStream       string
		Embeddings       [][]float32
		EmbeddingFloat   []float32
		Error            struct {
			Status               int
			Message, Type, Param string
		}
	}
	require.NoError(t, json.Unmarshal(b, &got), string(b))

	p, err := gpt.LoadTextGeneration(dirs["gpt"])
	require.NoError(t, err)
	cfg := p.Defaults()
	cfg.MaxNewTokens, cfg.NewTextOnly = 7, true
	want, err := p.Generate(ctx, []string{"the cat"}, cfg)
	require.NoError(t, err)
	tmpl, err := models.LoadChatTemplate(dirs["gpt"])
	require.NoError(t, err)
	prompt, err := tmpl.Apply(ctx, []models.ChatMessage{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello"}}, models.ChatOptions{AddGenerationPrompt: true})
	require.NoError(t, err)
	wantChat, err := p.Generate(ctx, []string{prompt}, cfg)
	require.NoError(t, err)
	f, err := bert.LoadFeatureExtraction(dirs["feat"])
	require.NoError(t, err)
	feats, err := f.Predict(ctx, []string{"the cat", "a dog ran"})
	require.NoError(t, err)

	require.Equal(t, []string{"feat", "gpt"}, got.Models)
	require.Equal(t, want[0].Text, got.Completion.Text)
	require.Equal(t, "length", got.Completion.Finish)
	require.Equal(t, 7, got.Completion.Usage.CompletionTokens)
	require.Equal(t, want[0].Text, got.CompletionStream)
	require.Equal(t, wantChat[0].Text, got.Chat.Content)
	require.Equal(t, "assistant", got.Chat.Role)
	require.Equal(t, wantChat[0].Text, got.ChatStream)
	require.Len(t, got.Embeddings, 2)
	for i, e := range got.Embeddings {
		require.Len(t, e, len(feats[i].Mean))
		for j, x := range feats[i].Mean {
			require.Equal(t, float32(x), e[j])
		}
	}
	one, err := f.Predict(ctx, []string{"the cat"}) // alone: a batch of one
	require.NoError(t, err)
	require.Len(t, got.EmbeddingFloat, len(one[0].Mean))
	for j, x := range one[0].Mean {
		require.Equal(t, float32(x), got.EmbeddingFloat[j])
	}
	require.Equal(t, 404, got.Error.Status)
	require.Contains(t, got.Error.Message, `unknown model "nope"`)
	require.Equal(t, "not_found_error", got.Error.Type)
	require.Equal(t, "model", got.Error.Param)
}

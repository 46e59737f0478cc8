package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// TestSentenceTransformers: a sentence-transformers folder serves
// feature extraction as its embeddings (H floats per text, its pooling
// and Normalize), on both routes.
func TestSentenceTransformers(t *testing.T) {
	ctx := context.Background()
	feat := tinyBERT(t)["BertModel"]
	m, _, err := bert.Load(feat)
	require.NoError(t, err)
	st, err := bert.NewSentenceEmbeddings(m, feat, bert.MeanPooling(m.Config.HiddenSize), true)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "st")
	require.NoError(t, st.Save(dir))
	ck, err := models.Open(dir)
	require.NoError(t, err)
	task, err := TaskForCheckpoint(ck)
	require.NoError(t, err)
	require.Equal(t, "feature-extraction", task)

	_, url := startServer(t, map[string]string{"st": dir}, Config{})
	lib, err := bert.LoadSentenceEmbeddings(dir)
	require.NoError(t, err)
	want, err := lib.Embed(ctx, []string{"the cat sat", "a dog"})
	require.NoError(t, err)

	code, body, _ := post(t, url+"/models/st", `{"inputs": ["the cat sat", "a dog"]}`)
	require.Equal(t, http.StatusOK, code, string(body))
	require.JSONEq(t, mustJSON(t, want), string(body))
	one, err := lib.Embed(ctx, []string{"a dog"})
	require.NoError(t, err)
	code, body, _ = post(t, url+"/models/st", `{"inputs": "a dog"}`)
	require.Equal(t, http.StatusOK, code, string(body))
	require.JSONEq(t, mustJSON(t, one[0]), string(body), "one text: its embedding, not a list")

	code, body, _ = post(t, url+"/v1/embeddings", `{"model": "st", "input": ["the cat sat", "a dog"]}`)
	require.Equal(t, http.StatusOK, code, string(body))
	var e struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &e))
	for i := range want {
		require.Equal(t, want[i], e.Data[i].Embedding)
	}
}

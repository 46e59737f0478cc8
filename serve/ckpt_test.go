package serve

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// tinyBERT writes tiny untrained BERT checkpoints of the heads the
// server's encoder tasks read (as cmd/zoo's predict tests make theirs),
// by architecture.
func tinyBERT(t testing.TB) map[string]string {
	t.Helper()
	tok, err := datasets.TrainWordPieceTexts(context.Background(),
		[]string{"the cat sat on the mat", "a dog ran in the park", "paris is in france"},
		datasets.WordPieceOptions{VocabSize: 200, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	cfg := bert.Tiny()
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumAttentionHeads, cfg.NumHiddenLayers = 16, 32, 2, 1
	cfg.MaxPositionEmbeddings, cfg.VocabSize = 32, tok.VocabSize()
	dir := t.TempDir()
	out := map[string]string{}
	for _, head := range []string{"Model", "ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering", "ForMaskedLM"} {
		arch := "Bert" + head
		m, err := bert.New(cfg, layers.WithSeed(3))
		require.NoError(t, err)
		var w models.Weights = m
		switch head {
		case "ForSequenceClassification":
			w, err = bert.NewForSequenceClassification(m, []string{"negative", "positive"})
		case "ForTokenClassification":
			w, err = bert.NewForTokenClassification(m, []string{"O", "B-LOC", "I-LOC"})
		case "ForQuestionAnswering":
			w, err = bert.NewForQuestionAnswering(m)
		case "ForMaskedLM":
			w, err = bert.NewForMaskedLM(cfg, layers.WithSeed(3))
		}
		require.NoError(t, err)
		out[arch] = filepath.Join(dir, arch)
		require.NoError(t, models.SaveText(out[arch], w, tok))
	}
	return out
}

// copyDir copies the files of src into a new temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.MkdirAll(dst, 0o755))
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
	}
	return dst
}

// chatGPT is the GPT pipeline test checkpoint with a chat template.
func chatGPT(t testing.TB) string {
	dir := copyDir(t, "../models/gpt/testdata/pipeline")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"),
		[]byte(`{"chat_template": "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"}`), 0o644))
	return dir
}

// testCheckpoints are the server tests' models, by name.
func testCheckpoints(t testing.TB) map[string]string {
	b := tinyBERT(t)
	return map[string]string{
		"cls":  b["BertForSequenceClassification"],
		"ner":  b["BertForTokenClassification"],
		"qa":   b["BertForQuestionAnswering"],
		"mlm":  b["BertForMaskedLM"],
		"feat": b["BertModel"],
		"gpt":  chatGPT(t),
		"gcls": "../models/gpt/testdata/classifier",
		"vit":  "../models/vit/testdata/parity",
		"mt":   "../models/seq2seq/testdata/pipeline",
	}
}

// slogTo is a logger writing text to w, under mu.
func slogTo(w io.Writer, mu *sync.Mutex) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{w, mu}, nil))
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

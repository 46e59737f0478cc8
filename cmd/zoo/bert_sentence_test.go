package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/train"
)

// sentenceSetup writes toy (anchor, positive) pairs as TSV and a tiny
// BERT checkpoint with a WordPiece of their words.
func sentenceSetup(t *testing.T) (pairs, ckpt string) {
	t.Helper()
	a := []string{"apple", "river", "stone", "cloud", "horse", "green"}
	b := []string{"zuk", "mepo", "tirran", "olq", "fesh", "yabu"}
	var sb strings.Builder
	var texts []string
	for i := range a {
		for j := range a {
			x, y := a[i]+" "+a[j], b[i]+" "+b[j]
			fmt.Fprintf(&sb, "%s\t%s\n", x, y)
			texts = append(texts, x, y)
		}
	}
	dir := t.TempDir()
	pairs = filepath.Join(dir, "pairs.tsv")
	require.NoError(t, os.WriteFile(pairs, []byte(sb.String()), 0o644))
	tok, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: 100, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	cfg := bert.Tiny()
	cfg.NumHiddenLayers, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.IntermediateSize = 1, 16, 2, 32
	cfg.VocabSize, cfg.MaxPositionEmbeddings = tok.VocabSize(), 16
	m, err := bert.New(cfg, layers.WithSeed(3))
	require.NoError(t, err)
	ckpt = filepath.Join(dir, "ckpt")
	require.NoError(t, models.SaveText(ckpt, m, tok))
	return pairs, ckpt
}

// zoo finetune bert --task embeddings writes a sentence-transformers
// folder; zoo predict embeds with it (feature-extraction, its default
// task) and scores similarity, each equal to the library's call.
func TestSentenceEmbeddingsCLI(t *testing.T) {
	pairs, ckpt := sentenceSetup(t)
	runDir := filepath.Join(t.TempDir(), "run")
	var out, errb bytes.Buffer
	code := run([]string{"finetune", "bert", "--task", "embeddings", "--init-from", ckpt, "--train-file", pairs, "--run", runDir,
		"--max-steps", "20", "--batch-size", "4", "--eval-steps", "20", "--learning-rate", "3e-3", "--val-fraction", "0.2", "--normalize"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", out.String(), errb.String())
	require.Contains(t, out.String(), "validation retrieval (7 pairs) recall@1")
	final := filepath.Join(runDir, train.CheckpointsDir, "final")
	require.FileExists(t, filepath.Join(final, bert.ModulesFile))

	texts := []string{"apple river", "zuk mepo", "olq fesh"}
	s, err := bert.LoadSentenceEmbeddings(final)
	require.NoError(t, err)
	require.True(t, s.Normalize)
	want, err := s.Embed(context.Background(), texts)
	require.NoError(t, err)

	out.Reset()
	code = run(append([]string{"predict", "--checkpoint", final, "--json"}, texts...), &out, &errb)
	require.Equal(t, 0, code, errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	for i, l := range lines {
		var got struct {
			Embedding []float32 `json:"sentence_embedding"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &got))
		require.Equal(t, want[i], got.Embedding)
	}

	out.Reset()
	code = run(append([]string{"predict", "--checkpoint", final, "--task", "sentence-similarity", "--json"}, texts...), &out, &errb)
	require.Equal(t, 0, code, errb.String())
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2, "one line per compared text")
	for i, l := range lines {
		var got struct{ Score float64 }
		require.NoError(t, json.Unmarshal([]byte(l), &got))
		require.InDelta(t, bert.Similarity("cosine", want[0], want[i+1]), got.Score, 1e-9)
	}
	out.Reset()
	code = run(append([]string{"predict", "--checkpoint", final, "--task", "sentence-similarity"}, texts...), &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "cosine similarity with: apple river\n")
	require.Contains(t, out.String(), "\tolq fesh\n")
}

// Inputs and folders zoo predict cannot use are clear errors, and the
// folder's files are unchanged.
func TestSentenceEmbeddingsCLIErrors(t *testing.T) {
	_, ckpt := sentenceSetup(t)
	m, _, err := bert.Load(ckpt)
	require.NoError(t, err)
	st, err := bert.NewSentenceEmbeddings(m, ckpt, bert.MeanPooling(m.Config.HiddenSize), false)
	require.NoError(t, err)
	folder := filepath.Join(t.TempDir(), "st")
	require.NoError(t, st.Save(folder))
	dense := filepath.Join(t.TempDir(), "dense")
	require.NoError(t, os.CopyFS(dense, os.DirFS(folder)))
	require.NoError(t, os.WriteFile(filepath.Join(dense, bert.ModulesFile), []byte(`[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
{"idx":2,"name":"2","path":"2_Dense","type":"sentence_transformers.models.Dense"}]`), 0o644))
	weighted := filepath.Join(t.TempDir(), "weighted")
	require.NoError(t, os.CopyFS(weighted, os.DirFS(folder)))
	require.NoError(t, os.WriteFile(filepath.Join(weighted, "1_Pooling", "config.json"), []byte(`{"word_embedding_dimension": 16, "pooling_mode_weightedmean_tokens": true}`), 0o644))
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"one input", []string{"predict", "--checkpoint", folder, "--task", "sentence-similarity", "apple"}, "give at least 2 inputs"},
		{"plain checkpoint", []string{"predict", "--checkpoint", ckpt, "--task", "sentence-similarity", "apple", "river"}, "cannot do sentence-similarity"},
		{"dense", []string{"predict", "--checkpoint", dense, "apple"}, "sentence_transformers.models.Dense, which zoo does not implement"},
		{"weightedmean", []string{"predict", "--checkpoint", weighted, "apple"}, "pooling_mode_weightedmean_tokens is not implemented in zoo"},
		{"one pair a batch", []string{"finetune", "bert", "--task", "embeddings", "--init-from", ckpt, "--train-file", filepath.Join(ckpt, "x.tsv"), "--batch-size", "1", "--run", filepath.Join(t.TempDir(), "r")},
			"in-batch negatives need at least 2 pairs a batch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, filepath.Dir(folder), dense, weighted)
			var out, errb bytes.Buffer
			code := run(c.args, &out, &errb)
			require.NotEqual(t, 0, code)
			require.Contains(t, errb.String(), c.want)
			require.NotContains(t, errb.String(), "panic")
			require.Equal(t, before, snapshot(t, filepath.Dir(folder), dense, weighted))
		})
	}
}

// snapshot is every file under dirs, by path.
func snapshot(t *testing.T, dirs ...string) map[string]string {
	out := map[string]string{}
	for _, d := range dirs {
		require.NoError(t, filepath.Walk(d, func(p string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			out[p] = string(b)
			return err
		}))
	}
	return out
}

// pretrain → finetune (embeddings) → predict, through the CLI.
func TestBERTPretrainEmbeddingsPredict(t *testing.T) {
	ckpt := pretrainTinyBERT(t)
	dir := t.TempDir()
	var rows strings.Builder
	colours := []string{"red", "blue", "green", "brown", "black", "white"}
	for i, c := range colours {
		for _, d := range colours[i+1:] {
			fmt.Fprintf(&rows, "the %s fox\tthe %s den\n", c+" "+d, c+" "+d)
		}
	}
	data := filepath.Join(dir, "pairs.tsv")
	require.NoError(t, os.WriteFile(data, []byte(rows.String()), 0o644))
	runDir := filepath.Join(dir, "emb")
	var out, errb bytes.Buffer
	code := run([]string{"finetune", "bert", "--task", "embeddings", "--init-from", ckpt, "--train-file", data, "--run", runDir,
		"--max-steps", "10", "--batch-size", "3", "--learning-rate", "1e-3", "--val-fraction", "0.2"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "validation retrieval before training over 3 pairs")
	out.Reset()
	code = run([]string{"predict", "--checkpoint", filepath.Join(runDir, "checkpoints", "final"), "--task", "sentence-similarity", "--json", "the red fox", "the red den", "the blue den"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Equal(t, 2, strings.Count(out.String(), `{"score":`))
}

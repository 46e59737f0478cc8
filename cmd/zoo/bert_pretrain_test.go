package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/stretchr/testify/require"
)

// bertTemplates writes a corpus of documents in the layout of
// create_pretraining_data.py (one sentence per line, blank lines between
// documents) whose masked words follow from their context.
func bertTemplates(t *testing.T, dir string, docs int) string {
	t.Helper()
	colours := []string{"red", "blue", "green", "black"}
	animals := []string{"fox", "cat", "owl", "dog"}
	rng := rand.New(rand.NewPCG(4, 5))
	var b strings.Builder
	for d := range docs {
		if d > 0 {
			b.WriteString("\n")
		}
		c := colours[rng.IntN(len(colours))]
		for range 10 {
			a := animals[rng.IntN(len(animals))]
			fmt.Fprintf(&b, "the %s %s runs to the %s den of the %s %s.\n", c, a, c, c, a)
		}
	}
	path := filepath.Join(dir, "corpus.txt")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// pretrainTinyBERT runs `zoo pretrain bert` on a generated corpus with a
// tiny model and returns its final checkpoint: the start of every BERT
// fine-tuning CLI test.
func pretrainTinyBERT(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	corpus := bertTemplates(t, dir, 30)
	cfg := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{
		"model": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64,
		          "max_position_embeddings": 64, "hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0},
		"vocab_size": 120, "max_seq_length": 32, "max_predictions_per_seq": 5,
		"batch_size": 8, "max_iters": 40, "warmup_iters": 4, "learning_rate": 3e-3,
		"eval_interval": 20, "save_interval": 20, "eval_batches": 2, "val_fraction": 0.1
	}`), 0o644))
	runDir := filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	code := run([]string{"pretrain", "bert", "--config", cfg, "--corpus", corpus, "--run", runDir}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "done: 40 steps")
	require.Contains(t, out.String(), "MLM accuracy")
	require.Contains(t, out.String(), "mlm_loss", "validation parts in the log lines")
	final := filepath.Join(runDir, "checkpoints", "final")
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
		require.FileExists(t, filepath.Join(final, f))
	}
	require.FileExists(t, filepath.Join(runDir, "vocab.txt"))
	return final
}

// pretrain → finetune (classify) → eval, through the CLI.
func TestBERTPretrainClassifyEval(t *testing.T) {
	ckpt := pretrainTinyBERT(t)
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"eval", "--checkpoint", ckpt, "--corpus", bertTemplates(t, dir, 6), "--max-seq-length", "32", "--max-predictions", "5"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Regexp(t, `pairs, \d+ predicted tokens: MLM accuracy 0\.\d+, MLM loss \d\.\d+ \(perplexity`, out.String())
	code = run([]string{"eval", "--checkpoint", ckpt, "--corpus", bertTemplates(t, dir, 6), "--max-seq-length", "128"}, &out, &errb)
	require.NotEqual(t, 0, code)
	require.Contains(t, errb.String(), "max_position_embeddings")
	out.Reset()
	data := writeColourTSV(t, dir)
	runDir := filepath.Join(dir, "cls")
	code = run([]string{"finetune", "bert", "--task", "classify", "--init-from", ckpt, "--train-file", data, "--run", runDir,
		"--max-steps", "80", "--batch-size", "8", "--learning-rate", "3e-3"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	out.Reset()
	code = run([]string{"eval", "--checkpoint", filepath.Join(runDir, "checkpoints", "final"), "--labelled", data}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "accuracy 1.0000", "the colour gives the label away")
}

func TestPretrainBERTBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pretrain", "bert"}, "no corpus"},
		{[]string{"pretrain", "bert", "--corpus", filepath.Join(dir, "missing.txt")}, "missing.txt"},
		{[]string{"pretrain", "bert", "--corpus", "x", "--model", "huge"}, "--model"},
		{[]string{"pretrain", "bert", "--corpus", "x", "--max-seq-length", "1024"}, "max_position_embeddings"},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		require.NotEqual(t, 0, code, c.args)
		require.Contains(t, errb.String(), c.want, c.args)
		require.NotContains(t, errb.String(), "panic")
	}
}

// pretrain → finetune (qa) → eval, through the CLI: the answer is the
// animal of a templated sentence.
func TestBERTPretrainQAEval(t *testing.T) {
	ckpt := pretrainTinyBERT(t)
	dir := t.TempDir()
	squad := writeAnimalSquad(t, dir)
	runDir := filepath.Join(dir, "qa")
	var out, errb bytes.Buffer
	code := run([]string{"finetune", "bert", "--task", "qa", "--init-from", ckpt, "--train-file", squad, "--run", runDir,
		"--max-steps", "80", "--batch-size", "8", "--learning-rate", "3e-3", "--max-seq-length", "32"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	out.Reset()
	code = run([]string{"eval", "--checkpoint", filepath.Join(runDir, "checkpoints", "final"), "--squad", squad, "--max-seq-length", "32"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Regexp(t, `exact match (9\d|100)\.\d\d`, out.String())
}

// pretrain → finetune (tokens) → eval, through the CLI: colours are ADJ,
// animals NOUN, the rest OTHER.
func TestBERTPretrainTokensEval(t *testing.T) {
	ckpt := pretrainTinyBERT(t)
	dir := t.TempDir()
	conll := writeColourCoNLL(t, dir)
	runDir := filepath.Join(dir, "tok")
	var out, errb bytes.Buffer
	code := run([]string{"finetune", "bert", "--task", "tokens", "--init-from", ckpt, "--train-file", conll, "--run", runDir,
		"--max-steps", "60", "--batch-size", "8", "--learning-rate", "3e-3"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	out.Reset()
	code = run([]string{"eval", "--checkpoint", filepath.Join(runDir, "checkpoints", "final"), "--conll", conll}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Regexp(t, `accuracy (0\.9\d+|1\.0+)`, out.String())
}

// tinyBERTFor writes an untrained BERT pretraining checkpoint (1 layer, 32
// wide, 2 heads, no dropout) with a lowercasing WordPiece of at most vocab
// tokens trained on texts: the start of the fine-tuning CLI tests that do
// not need pretraining.
func tinyBERTFor(t *testing.T, texts []string, vocab, maxPos int, seed uint64) string {
	t.Helper()
	tok, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: vocab, Lowercase: true})
	require.NoError(t, err)
	bc := bert.Tiny()
	bc.VocabSize, bc.HiddenSize, bc.NumHiddenLayers, bc.NumAttentionHeads, bc.IntermediateSize, bc.MaxPositionEmbeddings = tok.VocabSize(), 32, 1, 2, 64, maxPos
	bc.HiddenDropoutProb, bc.AttentionProbsDropoutProb = 0, 0
	m, err := bert.NewForPreTraining(bc, layers.WithSeed(seed))
	require.NoError(t, err)
	ckpt := filepath.Join(t.TempDir(), "bert")
	require.NoError(t, models.SaveText(ckpt, m, tok))
	return ckpt
}

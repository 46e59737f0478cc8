package main

// Issue 38's bad input for RoBERTa, DistilBERT and sentence embeddings, in
// the reliability catalogue's style: each a clear error naming the
// problem (exit code 1), never a panic, and the fixture's files unchanged.

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models/bert"
)

func TestVariantBadInputCatalogue(t *testing.T) {
	roberta := bertVariantHeads(t, bertVariantRoberta) // 34 positions: 32 tokens
	distil := bertVariantHeads(t, bertVariantDistil)
	pairs, ckpt := sentenceSetup(t)
	m, _, err := bert.Load(ckpt)
	require.NoError(t, err)
	st, err := bert.NewSentenceEmbeddings(m, ckpt, bert.MeanPooling(m.Config.HiddenSize), false)
	require.NoError(t, err)
	fix := t.TempDir()
	folder := filepath.Join(fix, "st")
	require.NoError(t, st.Save(folder))
	lasttoken := copyDir(t, folder, filepath.Join(fix, "lasttoken"))
	write(t, filepath.Join(lasttoken, "1_Pooling", "config.json"), `{"word_embedding_dimension": 16, "pooling_mode_lasttoken": true}`)
	onePair := write(t, filepath.Join(fix, "one.tsv"), "apple river\tzuk mepo\n")
	conll := write(t, filepath.Join(fix, "tags.conll"), "the O\nlight B-LOC\n\nthe O\nSun B-LOC\n\n")
	distilCfg := write(t, filepath.Join(fix, "distil.json"), `{"model": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
		"intermediate_size": 32, "max_position_embeddings": 32, "type_vocab_size": 2}, "max_seq_length": 32, "max_iters": 1, "warmup_iters": 0}`)
	corpus := write(t, filepath.Join(fix, "corpus.txt"), strings.Repeat("the red fox runs.\nthe fox sleeps.\n\n", 4))
	dirs := []string{fix, filepath.Dir(roberta["RobertaForMaskedLM"]), filepath.Dir(distil["DistilBertForMaskedLM"]), filepath.Dir(ckpt)}
	before := snapshot(t, dirs...)
	for _, c := range []struct {
		name string
		args func(dir string) []string
		msg  string
	}{
		{"RoBERTa: a text past max_position_embeddings − padding_idx − 1", func(string) []string {
			return []string{"predict", "--checkpoint", roberta["RobertaForMaskedLM"], "The <mask> of" + strings.Repeat(" the Sun", 20)}
		}, "the model takes at most 32 (max_position_embeddings − pad_token_id − 1): shorten it"},
		{"RoBERTa: token classification's max_length past max_position_embeddings − padding_idx − 1", func(dir string) []string {
			return []string{"finetune", "bert", "--task", "tokens", "--init-from", roberta["RobertaForMaskedLM"], "--train-file", conll,
				"--max-length", "33", "--run", filepath.Join(dir, "r")}
		}, "max_length 33 is more than the model's 32 tokens (max_position_embeddings − pad_token_id − 1: its positions start at pad_token_id + 1)"},
		{"DistilBERT: token types in a pretraining config", func(dir string) []string {
			return []string{"pretrain", "bert", "--model-type", "distilbert", "--config", distilCfg, "--corpus", corpus, "--run", filepath.Join(dir, "r")}
		}, "model.type_vocab_size 2: a DistilBERT has no token types (no token_type_embeddings, no token type ids); leave it out"},
		{"sentence-transformers: lasttoken pooling", func(string) []string {
			return []string{"predict", "--checkpoint", lasttoken, "apple"}
		}, "pooling_mode_lasttoken is not implemented in zoo"},
		{"contrastive: one pair a batch", func(dir string) []string {
			return []string{"finetune", "bert", "--task", "embeddings", "--init-from", ckpt, "--train-file", pairs, "--batch-size", "1", "--run", filepath.Join(dir, "r")}
		}, "in-batch negatives need at least 2 pairs a batch"},
		{"contrastive: a training file of one pair", func(dir string) []string {
			return []string{"finetune", "bert", "--task", "embeddings", "--init-from", ckpt, "--train-file", onePair, "--batch-size", "2", "--run", filepath.Join(dir, "r")}
		}, "training pairs, fewer than batch_size 2: in-batch negatives need a full batch of distinct pairs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(c.args(t.TempDir()), &out, &errb)
			require.Equal(t, 1, code, "%s%s", out.String(), errb.String())
			require.Contains(t, errb.String(), c.msg)
			require.NotContains(t, out.String()+errb.String(), "panic")
		})
	}
	require.Equal(t, before, snapshot(t, dirs...), "no file of the fixture changed")
}

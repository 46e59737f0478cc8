package seq2seq

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
)

var setupTexts = []string{"one two three four five", "eins zwei drei vier fünf", "six seven eight nine ten", "sechs sieben acht neun zehn"}

// modelFor is an untrained Tiny model with tok's vocabulary and the zoo's
// special ids.
func modelFor(t *testing.T, vocab int) *Model {
	t.Helper()
	cfg := Tiny()
	cfg.SrcVocabSize, cfg.TgtVocabSize = vocab, vocab
	cfg.PadTokenID, cfg.BOSTokenID, cfg.EOSTokenID = 0, 1, 2
	m, err := New(cfg, layers.WithSeed(1))
	require.NoError(t, err)
	return m
}

// A tokenizer of another model is reported as not matching the checkpoint:
// by its size, or by what it has at the special ids.
func TestCheckTokenizer(t *testing.T) {
	own, err := TrainTokenizer(setupTexts, 300)
	require.NoError(t, err)
	require.NoError(t, CheckTokenizer(modelFor(t, own.VocabSize()), own))

	err = CheckTokenizer(modelFor(t, own.VocabSize()+5), own)
	require.ErrorContains(t, err, "the tokenizer does not match the checkpoint")
	require.ErrorContains(t, err, "tokens, the model's vocabularies")

	foreign, err := datasets.TrainBPETexts(setupTexts, 300, nil) // no special tokens: id 0 is a byte
	require.NoError(t, err)
	m := modelFor(t, foreign.VocabSize())
	err = CheckTokenizer(m, foreign)
	require.ErrorContains(t, err, "the tokenizer does not match the checkpoint: the model's pad_token_id is 0")

	// Translation checks first, instead of failing on a "special id".
	_, _, err = Translate(m, foreign, []string{"one two"}, DecodeConfig{Beam: 1}, true, 4, nil)
	require.ErrorContains(t, err, "does not match the checkpoint")
}

// Translation stops between batches once its context is cancelled.
func TestTranslateContextCancelled(t *testing.T) {
	tok, err := TrainTokenizer(setupTexts, 300)
	require.NoError(t, err)
	m := modelFor(t, tok.VocabSize())
	ctx, cancel := context.WithCancel(context.Background())
	done := 0
	texts := strings.Split(strings.Repeat("one two three\n", 8), "\n")[:8]
	_, _, err = TranslateContext(ctx, m, tok, texts, DecodeConfig{Beam: 1, MaxLen: 4}, true, 2, func(n int) {
		done = n
		cancel()
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 2, done, "one batch, then the cancellation")
}

// lr_scheduler picks the schedule: noam by default (lr_factor scales the
// paper's), cosine with learning_rate and min_lr for a fixed budget; a
// schedule's settings given to the other, or an unknown name, are errors
// before anything runs.
func TestTrainConfigSchedule(t *testing.T) {
	c := DefaultTrainConfig()
	c.RunDir, c.Warmup, c.Steps, c.LRFactor = "run", 100, 1000, 0.5
	require.NoError(t, c.Validate())
	s, err := c.schedule(256)
	require.NoError(t, err)
	// Noam's peak at step warmup−1: factor·(d_model·warmup)^−0.5.
	require.InDelta(t, 0.5/160, s.LR(99), 1e-12)

	c.LRScheduler, c.LearningRate, c.MinLR = "cosine", 1e-3, 1e-5
	require.NoError(t, c.Validate())
	s, err = c.schedule(256)
	require.NoError(t, err)
	require.InDelta(t, 1e-3, s.LR(100), 1e-15, "the peak at the end of warmup")
	require.InDelta(t, (1e-3+1e-5)/2, s.LR(550), 1e-12, "halfway down")
	require.InDelta(t, 1e-5, s.LR(1000), 1e-15, "min_lr at max_steps")

	for _, bad := range []struct {
		edit func(*TrainConfig)
		msg  string
	}{
		{func(c *TrainConfig) { c.LRScheduler = "linear" }, `lr_scheduler "linear" must be "noam" or "cosine"`},
		{func(c *TrainConfig) { c.LRScheduler = "" }, "learning_rate and min_lr set the cosine schedule"},
		{func(c *TrainConfig) { c.LRScheduler, c.MinLR = "noam", 0 }, "learning_rate and min_lr set the cosine schedule"},
	} {
		b := c
		bad.edit(&b)
		require.ErrorContains(t, b.Validate(), bad.msg)
	}
	c.MinLR = 2e-3 // above the peak: the engine's schedule refuses it
	require.ErrorContains(t, c.Validate(), "min lr")
	c.MinLR, c.Warmup = 0, 1000 // no steps left to decay over
	require.ErrorContains(t, c.Validate(), "need 0 ≤ warmup (1000) < decay steps (1000)")
}

// With init_from, the config's model block is read over the checkpoint's
// config: the dropout rates it changes are taken and said; any change of
// architecture is an error naming the key and both values; the keys the
// tokenizer sets are not compared; the zoo's older key names read the same.
func TestModelOverride(t *testing.T) {
	ckpt := Tiny()
	ckpt.Dropout, ckpt.SrcVocabSize, ckpt.TgtVocabSize = 0.2, 71, 71
	var out strings.Builder
	got, err := modelOverride(ckpt, nil, &out)
	require.NoError(t, err)
	require.Equal(t, ckpt, got)
	require.Empty(t, out.String())

	got, err = modelOverride(ckpt, []byte(`{"model_type": "marian", "dropout": 0.1, "attention_dropout": 0.05, "vocab_size": 300}`), &out)
	require.NoError(t, err)
	want := ckpt
	want.Dropout, want.AttentionDropout = 0.1, 0.05
	require.Equal(t, want, got, "only the dropout rates change; vocab_size is the tokenizer's")
	require.Contains(t, out.String(), "init_from: model.dropout 0.1, the config's, replaces the checkpoint's 0.2\n")
	require.Contains(t, out.String(), "init_from: model.attention_dropout 0.05, the config's, replaces the checkpoint's 0\n")
	require.NotContains(t, out.String(), "activation_dropout")

	out.Reset()
	got, err = modelOverride(ckpt, []byte(`{"d_model": 32, "d_ff": 64, "num_heads": 4, "dropout": 0.2}`), &out)
	require.NoError(t, err, "the older names, equal to the checkpoint's")
	require.Equal(t, ckpt, got)
	require.Empty(t, out.String())

	_, err = modelOverride(ckpt, []byte(`{"model_type": "marian", "d_model": 64, "encoder_layers": 3, "dropout": 0.1}`), &out)
	require.ErrorContains(t, err, "changes model.d_model 64 (the checkpoint's: 32), model.encoder_layers 3 (the checkpoint's: 2); drop these keys")
	require.ErrorContains(t, err, "only the dropout rates, dropout, attention_dropout, activation_dropout, may differ")

	_, err = modelOverride(ckpt, []byte(`{"model_type": "marian", "normalize_before": true, "add_final_layer_norm": true}`), &out)
	require.ErrorContains(t, err, "model.normalize_before true (the checkpoint's: (none))")

	_, err = modelOverride(ckpt, []byte(`{"model_type": "gpt2"}`), &out)
	require.ErrorContains(t, err, "config: model: seq2seq config: model_type \"gpt2\" is another model family")
}

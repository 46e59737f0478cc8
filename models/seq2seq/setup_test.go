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

package gpt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
)

// charTokenizer is a character tokenizer of text.
func charTokenizer(t *testing.T, text string) datasets.Tokenizer {
	t.Helper()
	p := filepath.Join(t.TempDir(), "corpus.txt")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	c, err := datasets.OpenCorpus(p, datasets.CorpusOptions{})
	require.NoError(t, err)
	tok, err := datasets.NewCharTokenizer(c)
	require.NoError(t, err)
	return tok
}

// A tokenizer fits a model only with exactly its vocab_size tokens.
func TestCheckTokenizer(t *testing.T) {
	tok := charTokenizer(t, "abcdefghij")
	for _, tc := range []struct {
		vocab int
		err   string
	}{
		{tok.VocabSize(), ""},
		{tok.VocabSize() + 30, "fewer than the model's vocab_size"},
		{tok.VocabSize() - 2, "more than the model's vocab_size"},
	} {
		cfg := Micro()
		cfg.VocabSize, cfg.BOSTokenID, cfg.EOSTokenID = tc.vocab, 0, 0
		m, err := New(cfg)
		require.NoError(t, err)
		err = CheckTokenizer(m, tok)
		if tc.err == "" {
			require.NoError(t, err)
			continue
		}
		require.ErrorContains(t, err, tc.err)
		require.ErrorContains(t, err, "vocab_size")
	}
}

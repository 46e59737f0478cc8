package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
)

// Generating with a tokenizer smaller than the model fails up front,
// naming both sizes, instead of printing what little it can decode.
func TestGenerateRefusesSmallerTokenizer(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "corpus.txt")
	require.NoError(t, os.WriteFile(p, []byte("ab ba"), 0o644))
	c, err := datasets.OpenCorpus(p, datasets.CorpusOptions{})
	require.NoError(t, err)
	tok, err := datasets.NewCharTokenizer(c)
	require.NoError(t, err)
	cfg := gpt.Micro()
	cfg.VocabSize, cfg.BOSTokenID, cfg.EOSTokenID = 40, 0, 0
	m, err := gpt.New(cfg)
	require.NoError(t, err)
	ckpt := filepath.Join(dir, "ckpt")
	require.NoError(t, models.SaveText(ckpt, m, tok))

	var out, errb bytes.Buffer
	code := run([]string{"generate", "--checkpoint", ckpt, "--prompt", "ab", "--max-new-tokens", "40"}, &out, &errb)
	require.NotEqual(t, 0, code, out.String())
	require.Contains(t, errb.String(), "vocab_size 40")
	require.Contains(t, errb.String(), "the tokenizer has")
	require.Empty(t, out.String())
}

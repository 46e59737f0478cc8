package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
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

// --stop ends a GPT's text once its new text holds the stop string (kept):
// with a character tokenizer, right after its first occurrence.
func TestGenerateGPTStopString(t *testing.T) {
	ckpt := gptCheckpoint(t)
	base := []string{"generate", "--checkpoint", ckpt, "--prompt", "ab", "--temperature", "0", "--max-new-tokens", "12"}
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(base, &out, &errb), errb.String())
	cont := strings.TrimSuffix(strings.TrimPrefix(out.String(), "ab"), "\n")
	require.Len(t, cont, 12)
	stop := cont[3:4]
	want := "ab" + cont[:strings.Index(cont, stop)+1] + "\n"
	for _, beam := range []string{"1", "2"} {
		out.Reset()
		require.Equal(t, 0, run(append(cloneArgs(base), "--stop", stop, "--beam", beam), &out, &errb), errb.String())
		require.Equal(t, want, out.String(), "beam %s", beam)
	}
}

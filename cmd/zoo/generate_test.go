package main

import (
	"bytes"
	"context"
	"fmt"
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

// --repetition-penalty on a GPT is gpt.TextGeneration's RepetitionPenalty
// (greedy and beam search), and a penalty of 3 breaks the micro model.s
// run of one letter.
func TestGenerateGPTRepetitionPenalty(t *testing.T) {
	ckpt := gptCheckpoint(t)
	p, err := gpt.LoadTextGeneration(ckpt)
	require.NoError(t, err)
	base := []string{"generate", "--checkpoint", ckpt, "--prompt", "ab", "--temperature", "0", "--max-new-tokens", "12"}
	var plain, out, errb bytes.Buffer
	require.Equal(t, 0, run(base, &plain, &errb), errb.String())
	for _, beam := range []int{1, 2} {
		cfg := p.Defaults()
		cfg.Temperature, cfg.MaxNewTokens, cfg.Beam, cfg.RepetitionPenalty = 0, 12, beam, 3
		cfg.EOS = nil // zoo generate on a GPT does not stop at eos
		want, err := p.Generate(context.Background(), []string{"ab"}, cfg)
		require.NoError(t, err)
		out.Reset()
		require.Equal(t, 0, run(append(cloneArgs(base), "--repetition-penalty", "3", "--beam", fmt.Sprint(beam)), &out, &errb), errb.String())
		require.Equal(t, want[0].Text+"\n", out.String(), "beam %d", beam)
		if beam == 1 {
			require.NotEqual(t, plain.String(), out.String())
		}
	}
	out.Reset()
	require.Equal(t, 2, run(append(cloneArgs(base), "--chat"), &out, &errb))
	require.Contains(t, errb.String(), "--chat, --system and --messages are for LLaMA-family checkpoints")
}

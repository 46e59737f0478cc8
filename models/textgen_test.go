package models_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
)

// TestContinuation: a Llama 2 decoder strips the leading space of a text,
// so the continuation of a prompt is cut from the whole decode, as
// transformers' text-generation pipeline cuts it, and streamed the same
// way once the streamer is primed with the prompt.
func TestContinuation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "corpus.txt")
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("light is refracted by the prism\n", 50)), 0o644))
	c, err := datasets.OpenCorpus(path, datasets.CorpusOptions{})
	require.NoError(t, err)
	tok, err := datasets.TrainLlamaBPE(context.Background(), c, datasets.LlamaBPEOptions{VocabSize: 320}) // words start with "▁"
	require.NoError(t, err)
	const text = "light is refracted"
	whole, err := tok.Encode(text)
	require.NoError(t, err)
	// the first cut before a token that starts a word ("▁is"): decoded
	// alone, its leading space is stripped
	k := 0
	for i := 1; i < len(whole) && k == 0; i++ {
		head, err := tok.Decode(whole[:i])
		require.NoError(t, err)
		alone, err := tok.Decode(whole[i:])
		require.NoError(t, err)
		if head+alone != text && head+" "+alone == text {
			k = i
		}
	}
	require.NotZero(t, k, "a cut before a word's start")
	prompt, tokens := whole[:k], whole[k:]
	head, err := tok.Decode(prompt)
	require.NoError(t, err)
	alone, err := tok.Decode(tokens)
	require.NoError(t, err)

	got, err := models.Continuation(tok, prompt, tokens)
	require.NoError(t, err)
	require.Equal(t, text, head+got)

	var s models.TextStreamer
	s.Prime(prompt, tok)
	streamed := ""
	for _, id := range tokens {
		streamed += s.Add(id, tok)
	}
	streamed += s.Flush(tok)
	require.Equal(t, got, streamed)

	// the pipelines' Streams: the same text, piece by piece, with an EOS
	// token left out and stripped from the row's tokens
	const eos = 2
	var pieces string
	cfg := models.TextGenerationConfig{EOS: []int{eos}, OnText: func(prompt int, piece string) {
		require.Equal(t, 7, prompt, "prompt numbers count from the batch's first")
		pieces += piece
	}}
	ss := models.NewStreams(tok, [][]int{prompt}, 7, cfg)
	on := ss.OnToken()
	for _, id := range tokens {
		on(0, id)
	}
	on(0, eos)
	rows := [][]int{append(slices.Clone(tokens), eos)}
	ss.Finish(rows, cfg.EOS)
	require.Equal(t, got, pieces)
	require.Equal(t, tokens, rows[0])
	pieces = ""
	ss.Whole(0, tokens)
	require.Equal(t, got, pieces, "beam search's whole continuation")
	require.Nil(t, models.NewStreams(tok, [][]int{prompt}, 0, models.TextGenerationConfig{}), "no OnText, no streams")

	got, err = models.Continuation(tok, nil, tokens)
	require.NoError(t, err)
	require.Equal(t, alone, got, "no prompt: the tokens' own text")
}

package pretrain

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
)

// EvalGPT honours its context: cancelled, it stops with an error wrapping
// context.Canceled instead of scoring the corpus.
func TestEvalGPTStopsOnCancel(t *testing.T) {
	corpus := writeCorpus(t, strings.Repeat("some text here. ", 200))
	cfg := tinyConfig(t, corpus)
	c, err := datasets.OpenCorpus(corpus, datasets.CorpusOptions{})
	require.NoError(t, err)
	tok, err := datasets.NewCharTokenizer(c)
	require.NoError(t, err)
	mc := cfg.Model
	mc.VocabSize = tok.VocabSize()
	m, err := gpt.New(mc, layers.WithSeed(1))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "ckpt")
	require.NoError(t, models.SaveText(dir, m, tok))
	loss, n, err := EvalGPT(context.Background(), dir, corpus, 4)
	require.NoError(t, err)
	require.Positive(t, n)
	require.Positive(t, loss)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = EvalGPT(ctx, dir, corpus, 4)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
}

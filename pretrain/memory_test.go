package pretrain

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/graphtest"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
)

// huge is a batch size no machine has the memory for.
const huge = 1_000_000_000

// refusesBeforeAllocating runs f, which must fail with an error containing
// every one of want, having allocated less than 256 MB: the memory check
// comes before the batches.
func refusesBeforeAllocating(t *testing.T, f func() error, want ...string) {
	t.Helper()
	graphtest.RefusesBeforeAllocating(t, 256<<20, f, want...)
}

// A batch size that cannot fit is a clear error from GPT pretraining and
// from evaluation (zoo eval), before any batch is made.
func TestGPTRefusesHugeBatch(t *testing.T) {
	corpus := writeCorpus(t, strings.Repeat("some text here. ", 200))
	cfg := tinyConfig(t, corpus)
	cfg.BatchSize = huge
	refusesBeforeAllocating(t, func() error { _, err := RunGPT(context.Background(), cfg, io.Discard); return err },
		"pretrain: batch_size 1000000000 × block 16", "lower batch_size")

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
	_, _, err = EvalGPT(context.Background(), dir, corpus, 4)
	require.NoError(t, err)
	refusesBeforeAllocating(t, func() error { _, _, err := EvalGPT(context.Background(), dir, corpus, huge); return err },
		"eval: batch 1000000000 × n_positions 16", "lower the batch size (zoo eval --batch-size)")
}

// A batch size that cannot fit is a clear error from denoising
// pretraining, before any batch is made.
func TestSeq2SeqRefusesHugeBatch(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 60; i++ {
		b.WriteString([]string{"the cat sat on the mat.", "a dog ran home!", "is the sun up?"}[i%3] + "\n")
	}
	cfg := DefaultSeq2Seq()
	cfg.Corpus, cfg.OutputDir = writeCorpus(t, b.String()), filepath.Join(t.TempDir(), "run")
	cfg.Model.DModel, cfg.Model.NumHeads, cfg.Model.DFF, cfg.Model.NumEncoderLayers, cfg.Model.NumDecoderLayers = 32, 4, 64, 1, 1
	cfg.Model.MaxLen, cfg.BPEVocab, cfg.HeldOut, cfg.BatchSize = 32, 300, 10, huge
	refusesBeforeAllocating(t, func() error { _, err := RunSeq2Seq(context.Background(), cfg, io.Discard); return err },
		"seq2seq: batch_size 1000000000, in buckets of up to", "lower batch_size")
}

package finetune

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/graphtest"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/models/seq2seq"
)

// huge is a batch size (or beam) no machine has the memory for.
const huge = 1_000_000_000

// refusesBeforeAllocating runs f, which must fail with an error containing
// every one of want, having allocated less than 256 MB: the memory check
// comes before the batches.
func refusesBeforeAllocating(t *testing.T, f func() error, want ...string) {
	t.Helper()
	graphtest.RefusesBeforeAllocating(t, 256<<20, f, want...)
}

// A batch size that cannot fit is a clear error from classification
// fine-tuning and its evaluation, naming what to lower.
func TestClassifyRefusesHugeBatch(t *testing.T) {
	csv, corpus := toySet(t, 40, 3)
	cfg := DefaultClassify()
	cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = tinyCheckpoint(t, corpus), csv, filepath.Join(t.TempDir(), "cls")
	cfg.BatchSize = huge
	refusesBeforeAllocating(t, func() error { _, err := RunClassify(context.Background(), cfg, io.Discard); return err },
		"finetune: batch_size 1000000000 × max_length", "lower batch_size or max_length")

	// A classifier checkpoint for zoo eval's path.
	m, _, err := gpt.Load(cfg.Checkpoint)
	require.NoError(t, err)
	clf, err := gpt.NewClassifier(m, []string{"neg", "pos"})
	require.NoError(t, err)
	tok, err := models.LoadTokenizer(cfg.Checkpoint)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "clf")
	require.NoError(t, models.SaveText(dir, clf, tok))
	_, err = EvalClassify(context.Background(), dir, csv, 4)
	require.NoError(t, err)
	refusesBeforeAllocating(t, func() error { _, err := EvalClassify(context.Background(), dir, csv, huge); return err },
		"eval: batch_size 1000000000 × max_length 32", "lower the batch size (zoo eval --batch-size)")
}

// pairsTSV writes n English–German-like pairs.
func pairsTSV(t *testing.T, n int) string {
	var b strings.Builder
	words := []string{"cat", "dog", "house", "tree", "sun", "moon"}
	for i := 0; i < n; i++ {
		w := words[i%len(words)] + fmt.Sprint(i%7)
		fmt.Fprintf(&b, "the %s is here\tder %s ist hier\n", w, w)
	}
	p := filepath.Join(t.TempDir(), "pairs.tsv")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	return p
}

// A batch size that cannot fit is a clear error from translation
// training before any batch is made, and a beam that cannot fit one from
// scoring before anything is decoded.
func TestTranslationRefusesHugeBatch(t *testing.T) {
	cfg := DefaultTranslation()
	cfg.Data, cfg.OutputDir = pairsTSV(t, 60), filepath.Join(t.TempDir(), "run")
	cfg.Model = seq2seq.Tiny()
	cfg.Model.MaxLen = 32
	cfg.BPEVocab, cfg.HeldOut, cfg.BatchSize = 300, 10, huge
	refusesBeforeAllocating(t, func() error { _, err := RunTranslation(context.Background(), cfg, io.Discard); return err },
		"seq2seq: batch_size 1000000000, in buckets of up to", "lower batch_size")

	pairs, _, err := datasets.ReadParallelTSV(cfg.Data, datasets.ParallelOptions{})
	require.NoError(t, err)
	var texts []string
	for _, p := range pairs {
		texts = append(texts, p.Src, p.Tgt)
	}
	tok, err := seq2seq.TrainTokenizer(texts, 300)
	require.NoError(t, err)
	mc := cfg.Model
	mc.SrcVocabSize, mc.TgtVocabSize = tok.VocabSize(), tok.VocabSize()
	m, err := seq2seq.New(mc)
	require.NoError(t, err)
	_, _, err = ScoreTranslation(m, tok, pairs[:4], seq2seq.DecodeConfig{Beam: 2, MaxLen: 4}, false)
	require.NoError(t, err)
	refusesBeforeAllocating(t, func() error {
		_, _, err := ScoreTranslation(m, tok, pairs, seq2seq.DecodeConfig{Beam: huge, LengthPenalty: 0.6}, false)
		return err
	}, "finetune: decoding 60 sources of up to", "with beam 1000000000", "lower num_beams")
}

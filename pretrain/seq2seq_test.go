package pretrain

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/train"
)

// tinySeq2Seq is a 5-step denoising run on corpus with a checkpoint at
// step 5.
func tinySeq2Seq(t *testing.T, corpus string) Seq2SeqConfig {
	cfg := DefaultSeq2Seq()
	cfg.Corpus, cfg.OutputDir = corpus, filepath.Join(t.TempDir(), "run")
	cfg.BPEVocab, cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps, cfg.HeldOut = 300, 8, 5, 2, 5, 5, 10
	cfg.Model = seq2seq.Tiny()
	cfg.Model.MaxLen = 24
	return cfg
}

// A seq2seq resume given another corpus is refused, naming the data; with
// Force it goes on with the checkpoint's tokenizer, saying so.
func TestSeq2SeqResumeRefusesChangedCorpus(t *testing.T) {
	line := "one two three four five. eins zwei drei vier fünf.\n"
	cfg := tinySeq2Seq(t, writeCorpus(t, strings.Repeat(line, 40)))
	_, err := RunSeq2Seq(context.Background(), cfg, io.Discard)
	require.NoError(t, err)
	ckpt, err := train.Latest(cfg.OutputDir)
	require.NoError(t, err)
	before, err := models.LoadTokenizer(ckpt)
	require.NoError(t, err)
	want, err := before.MarshalJSON()
	require.NoError(t, err)

	cfg.MaxSteps, cfg.Resume = 8, true
	cfg.Corpus = writeCorpus(t, strings.Repeat("six seven eight nine ten. sechs sieben acht neun zehn.\n", 40))
	_, err = RunSeq2Seq(context.Background(), cfg, io.Discard)
	require.ErrorContains(t, err, "data: the run has")
	require.ErrorContains(t, err, "--force")

	changed := cfg
	changed.Corpus = writeCorpus(t, strings.Repeat(line, 40))
	changed.Model.DFF = 128
	_, err = RunSeq2Seq(context.Background(), changed, io.Discard)
	require.ErrorContains(t, err, "model.encoder_ffn_dim: the run has 64, now 128")

	// The same lines with two words swapped in the last: other data with the
	// same token counts, so that the data position can be restored.
	cfg.Force = true
	cfg.Corpus = writeCorpus(t, strings.Repeat(line, 39)+"one three two four five. eins drei zwei vier fünf.\n")
	var out bytes.Buffer
	res, err := RunSeq2Seq(context.Background(), cfg, &out)
	require.NoError(t, err)
	require.Equal(t, 8, res.Steps)
	require.Contains(t, out.String(), "--force: going on")
	after, err := models.LoadTokenizer(res.Final)
	require.NoError(t, err)
	got, err := after.MarshalJSON()
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}

// The Bible denoising config the README runs reads and validates, with the
// model of the English→Spanish config it is fine-tuned with.
func TestBibleDenoiseConfigReads(t *testing.T) {
	cfg, err := ReadSeq2SeqConfig(filepath.Join("..", "tools", "seq2seq", "bible-denoise.json"), DefaultSeq2Seq())
	require.NoError(t, err)
	require.NoError(t, cfg.Validate())
	require.Equal(t, 128, cfg.Model.MaxLen)
	require.Equal(t, 0.3, cfg.Noise.MaskRatio)
}

// Distillation is fine-tuning's: denoising pretraining has no such
// setting, so a config file that asks for it is refused as an unknown key,
// not run without it.
func TestSeq2SeqRefusesDistillation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "denoise.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"corpus": "mono.txt", "distill_from": "teacher"}`), 0o644))
	_, err := ReadSeq2SeqConfig(path, DefaultSeq2Seq())
	require.ErrorContains(t, err, `unknown field "distill_from"`)
}

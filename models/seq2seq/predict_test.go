package seq2seq

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// savedTranslator writes an untrained Tiny model with the tokenizer of
// setupTexts and the generation fields extra (into its config.json and so
// its generation_config.json) into a new directory.
func savedTranslator(t testing.TB, extra map[string]string) (string, *Model) {
	t.Helper()
	tok, err := TrainTokenizer(setupTexts, 300)
	require.NoError(t, err)
	cfg := Tiny()
	cfg.SrcVocabSize, cfg.TgtVocabSize = tok.VocabSize(), tok.VocabSize()
	cfg.PadTokenID, cfg.BOSTokenID, cfg.EOSTokenID = 0, 1, 2
	cfg.Extra = map[string]json.RawMessage{}
	for k, v := range extra {
		cfg.Extra[k] = json.RawMessage(v)
	}
	m, err := New(cfg, layers.WithSeed(6), layers.WithInitStd(0.3))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, models.SaveText(dir, m, tok))
	return dir, m
}

// The pipeline's decoding is the checkpoint's generation settings as zoo
// translate reads them, and without them zoo translate's beam of 4.
func TestTranslationDefaults(t *testing.T) {
	dir, _ := savedTranslator(t, map[string]string{"num_beams": "3", "length_penalty": "1.2", "early_stopping": `"never"`, "max_length": "9"})
	p, err := LoadTranslation(dir)
	require.NoError(t, err)
	d := p.Decode
	require.Equal(t, 3, d.Beam)
	require.Equal(t, 1, d.NBest)
	require.Equal(t, 1.2, d.LengthPenalty)
	require.Equal(t, decode.HFPenalty, d.LengthPenaltyStyle)
	require.Equal(t, decode.StopNever, d.EarlyStopping)
	require.Equal(t, 9, *d.Generation.MaxLength)

	dir, _ = savedTranslator(t, nil)
	p, err = LoadTranslation(dir)
	require.NoError(t, err)
	d = p.Decode
	require.Equal(t, [3]any{DefaultBeam, DefaultLengthPenalty, decode.GNMTPenalty}, [3]any{d.Beam, d.LengthPenalty, d.LengthPenaltyStyle})
	require.Equal(t, decode.StopAtBeam, d.EarlyStopping)
}

// Translate and TranslateNBest are TranslateContext's candidates with the
// checkpoint's decoding, by beam search and greedily, in batches of any
// size.
func TestTranslationEqualsTranslateContext(t *testing.T) {
	dir, m := savedTranslator(t, map[string]string{"num_beams": "3", "max_length": "7"})
	p, err := LoadTranslation(dir)
	require.NoError(t, err)
	texts := []string{"one two three", "sechs sieben", "  four five six seven eight nine ten one two  ", "zehn"}
	ctx := context.Background()
	gen, err := ReadGeneration(dir, m.Config)
	require.NoError(t, err)
	for _, batch := range []int{1, 3, 0} {
		p.BatchSize = batch
		b := batch
		if b == 0 {
			b = DefaultBatchSize
		}
		want, _, err := TranslateContext(ctx, p.Model, p.Tokenizer, texts, DecodeConfig{Beam: 3, NBest: 2, LengthPenalty: DefaultLengthPenalty, Generation: &gen}, false, b, nil)
		require.NoError(t, err)
		best, err := p.Translate(ctx, texts)
		require.NoError(t, err)
		nbest, err := p.TranslateNBest(ctx, texts, 2)
		require.NoError(t, err)
		for i := range texts {
			require.Equal(t, want[i], nbest[i], "batch %d, text %d", batch, i)
			require.Equal(t, want[i][0].Text, best[i], "batch %d, text %d", batch, i)
		}
	}

	p.Decode.Beam = 1
	want, _, err := TranslateContext(ctx, p.Model, p.Tokenizer, texts, DecodeConfig{Beam: 1, Generation: &gen}, true, DefaultBatchSize, nil)
	require.NoError(t, err)
	got, err := p.Translate(ctx, texts)
	require.NoError(t, err)
	for i := range texts {
		require.Equal(t, want[i][0].Text, got[i], "greedy, text %d", i)
	}
}

// Translation refuses what it cannot answer, naming it, and stops when
// its context is done.
func TestTranslationRefuses(t *testing.T) {
	dir, _ := savedTranslator(t, nil)
	p, err := LoadTranslation(dir)
	require.NoError(t, err)
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		texts []string
		want  string
	}{
		{"none", nil, "no texts"},
		{"too many", make([]string, models.MaxPredictInputs+1), "more than 65536"},
		{"too long", []string{"one", strings.Repeat("a", models.MaxPredictTextBytes+1)}, "text 1 has 16777217 bytes"},
		{"blank", []string{"one", "  "}, "source 1 is empty"},
	} {
		_, err := p.Translate(ctx, c.texts)
		require.ErrorContains(t, err, c.want, c.name)
	}
	for _, n := range []int{0, DefaultBeam + 1} {
		_, err := p.TranslateNBest(ctx, []string{"one"}, n)
		require.ErrorContains(t, err, "want 1 to the beam", "n %d", n)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = p.Translate(cancelled, []string{"one two"})
	require.ErrorIs(t, err, context.Canceled)
}

// TestWritePipelineTestdata writes testdata/pipeline, a tiny untrained
// translator of a word-level tokenizer (its outputs are words, if random
// ones) with a generation_config.json (beam 2, at most 8 tokens), which
// the Example loads. It runs only with ZOO_WRITE_TESTDATA=1.
func TestWritePipelineTestdata(t *testing.T) {
	if os.Getenv("ZOO_WRITE_TESTDATA") != "1" {
		t.Skip("set ZOO_WRITE_TESTDATA=1 to rewrite testdata/pipeline")
	}
	tok, err := datasets.TrainWordLevelTexts(context.Background(), setupTexts, datasets.WordLevelOptions{})
	require.NoError(t, err)
	cfg := Tiny()
	cfg.SrcVocabSize, cfg.TgtVocabSize = tok.VocabSize(), tok.VocabSize()
	cfg.Extra = map[string]json.RawMessage{"num_beams": json.RawMessage("2"), "max_length": json.RawMessage("8")}
	m, err := New(cfg, layers.WithSeed(2), layers.WithInitStd(0.3))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll("testdata/pipeline", 0o755))
	require.NoError(t, models.SaveText("testdata/pipeline", m, tok))
}

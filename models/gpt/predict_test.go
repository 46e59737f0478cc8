package gpt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/internal/graphrun"
)

// pipelineTexts train the byte-level BPE of the pipeline tests: ASCII
// words, so that é, € and 日 stay split into their bytes.
var pipelineTexts = []string{"the cat sat on the mat", "a dog ran in the park", "the sun is hot today", "é € 日"}

// pipelineTokenizer is a byte-level BPE with GPT-2's <|endoftext|>.
func pipelineTokenizer(t testing.TB) datasets.Tokenizer {
	t.Helper()
	tok, err := datasets.TrainBPETexts(pipelineTexts, 300, []string{"<|endoftext|>"})
	require.NoError(t, err)
	return tok
}

// savedLM writes a Micro language model of tok's vocabulary, eos and bos
// <|endoftext|>, with tok and the generation_config.json gen (none when
// empty), into a new directory.
func savedLM(t testing.TB, gen string) (string, *Model) {
	t.Helper()
	tok := pipelineTokenizer(t)
	eos, err := tok.Encode("<|endoftext|>")
	require.NoError(t, err)
	require.Len(t, eos, 1)
	cfg := Micro()
	cfg.VocabSize, cfg.BOSTokenID, cfg.EOSTokenID = tok.VocabSize(), eos[0], eos[0]
	cfg.InitializerRange = 0.3 // peaked, varied logits
	m, err := New(cfg, layers.WithSeed(11))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, models.SaveText(dir, m, tok))
	if gen != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, decode.GenerationFile), []byte(gen), 0o644))
	}
	return dir, m
}

// encodeAll is the prompts' token ids.
func encodeAll(t *testing.T, tok datasets.Tokenizer, prompts []string) [][]int {
	t.Helper()
	out := make([][]int, len(prompts))
	for i, p := range prompts {
		ids, err := tok.Encode(p)
		require.NoError(t, err)
		out[i] = ids
	}
	return out
}

// The pipeline's texts are Generate's and BeamSearch's tokens, decoded
// after the prompt, greedy, sampled and by beam search; the checkpoint's
// generation_config.json gives the defaults.
func TestTextGenerationEqualsGenerate(t *testing.T) {
	dir, _ := savedLM(t, `{"do_sample": false, "max_new_tokens": 9}`)
	p, err := LoadTextGeneration(dir)
	require.NoError(t, err)
	cfg := p.Defaults()
	require.Equal(t, 9, cfg.MaxNewTokens)
	require.Zero(t, cfg.Temperature, "do_sample false is greedy")
	require.Equal(t, []int{p.Model.Config.EOSTokenID}, cfg.EOS)

	prompts := []string{"the cat", "a dog ran", "the sun is"}
	ids := encodeAll(t, p.Tokenizer, prompts)
	ctx := context.Background()
	sampled := cfg
	sampled.Temperature, sampled.Seed = 1, 5
	beam := cfg
	beam.Beam, beam.LengthPenalty = 3, 0.6
	for _, c := range []struct {
		name string
		cfg  TextGenerationConfig
		want func() [][]int
	}{
		{"greedy", cfg, func() [][]int {
			toks, err := p.Model.Generate(ids, GenerateConfig{MaxNewTokens: 9, TopP: 1, EOS: cfg.EOS, Generation: &p.Generation})
			require.NoError(t, err)
			return toks
		}},
		{"sampled", sampled, func() [][]int {
			toks, err := p.Model.Generate(ids, GenerateConfig{MaxNewTokens: 9, Temperature: 1, TopP: 1, Seed: 5, EOS: cfg.EOS, Generation: &p.Generation})
			require.NoError(t, err)
			return toks
		}},
		{"beam", beam, func() [][]int {
			hyps, err := p.Model.BeamSearch(ids, BeamConfig{Beam: 3, LengthPenalty: 0.6, MaxNewTokens: 9, EOS: cfg.EOS, Generation: &p.Generation})
			require.NoError(t, err)
			var out [][]int
			for _, h := range hyps {
				out = append(out, h[0].Tokens)
			}
			return out
		}},
	} {
		want := c.want()
		got, err := p.Generate(ctx, prompts, c.cfg)
		require.NoError(t, err, c.name)
		require.Len(t, got, len(prompts))
		for i, g := range got {
			tokens := models.WithoutEOS(want[i], cfg.EOS)
			require.Equal(t, tokens, g.Tokens, "%s, prompt %d", c.name, i)
			text, err := p.Tokenizer.Decode(tokens)
			require.NoError(t, err)
			require.Equal(t, prompts[i]+text, g.Text, "%s, prompt %d: the full text", c.name, i)
		}
		c.cfg.NewTextOnly = true
		only, err := p.Generate(ctx, prompts, c.cfg)
		require.NoError(t, err)
		for i := range only {
			require.Equal(t, got[i].Text, prompts[i]+only[i].Text, "%s: return_full_text=False", c.name)
		}
	}

	// Greedy texts do not depend on the batch.
	p.BatchSize = 1
	one, err := p.Generate(ctx, prompts, cfg)
	require.NoError(t, err)
	p.BatchSize = 0
	all, err := p.Generate(ctx, prompts, cfg)
	require.NoError(t, err)
	require.Equal(t, all, one)
}

// The checkpoint's generation settings are zoo generate's defaults:
// sampling with its temperature and top-k, max_length less the prompt;
// without any, zoo generate's own.
func TestTextGenerationDefaults(t *testing.T) {
	dir, _ := savedLM(t, `{"do_sample": true, "temperature": 0.7, "top_k": 5, "max_length": 12, "num_beams": 1}`)
	p, err := LoadTextGeneration(dir)
	require.NoError(t, err)
	cfg := p.Defaults()
	require.Equal(t, TextGenerationConfig{MaxLength: 12, Temperature: 0.7, TopK: 5, TopP: 1, Seed: DefaultSeed, Beam: 1, EOS: cfg.EOS}, cfg)
	cfg.EOS = nil // no early end: the length is max_length's
	got, err := p.Generate(context.Background(), []string{"the cat sat"}, cfg)
	require.NoError(t, err)
	require.Len(t, got[0].Tokens, 12-len(encodeAll(t, p.Tokenizer, []string{"the cat sat"})[0]))

	bare, _ := savedLM(t, "")
	p, err = LoadTextGeneration(bare)
	require.NoError(t, err)
	cfg = p.Defaults()
	require.Equal(t, DefaultMaxNewTokens, cfg.MaxNewTokens)
	require.Equal(t, DefaultTemperature, cfg.Temperature)
}

// Streaming gives the continuation in pieces that never split a UTF-8
// character and join to the text; an empty prompt starts from
// bos_token_id.
func TestTextGenerationStream(t *testing.T) {
	dir, _ := savedLM(t, "")
	p, err := LoadTextGeneration(dir)
	require.NoError(t, err)
	cfg := p.Defaults()
	cfg.MaxNewTokens, cfg.EOS = 24, nil
	for _, beam := range []int{1, 2} {
		cfg.Beam = beam
		pieces := map[int][]string{}
		cfg.OnText = func(prompt int, piece string) { pieces[prompt] = append(pieces[prompt], piece) }
		prompts := []string{"the", "", "日"}
		got, err := p.Generate(context.Background(), prompts, cfg)
		require.NoError(t, err)
		for i, g := range got {
			for _, s := range pieces[i] {
				require.True(t, utf8.ValidString(s) && s != "", "piece %q", s)
			}
			require.Equal(t, g.Text, prompts[i]+strings.Join(pieces[i], ""), "beam %d, prompt %d", beam, i)
		}
	}
}

// The streamer holds back the bytes of a character until its last one
// comes: é (2 bytes) and € (3) come whole.
func TestStreamerRunes(t *testing.T) {
	tok := pipelineTokenizer(t)
	ids, err := tok.Encode("aé€b")
	require.NoError(t, err)
	require.Len(t, ids, 1+2+3+1, "one token a byte")
	var s models.TextStreamer
	var pieces []string
	for _, id := range ids {
		if piece := s.Add(id, tok); piece != "" {
			pieces = append(pieces, piece)
		}
	}
	require.Equal(t, []string{"a", "é", "€", "b"}, pieces)
	require.Empty(t, s.Flush(tok))

	// A character cut off at the end comes out as U+FFFD, as the text has it.
	s = models.TextStreamer{}
	require.Empty(t, s.Add(ids[1], tok))
	require.Equal(t, "\uFFFD", s.Flush(tok))
}

// Generation stops when its context is done, before the first token or
// between tokens, and refuses what it cannot answer.
func TestTextGenerationRefuses(t *testing.T) {
	dir, _ := savedLM(t, "")
	p, err := LoadTextGeneration(dir)
	require.NoError(t, err)
	cfg := p.Defaults()
	cfg.EOS = nil
	ctx, cancel := context.WithCancel(context.Background())
	tokens := 0
	cfg.OnText = func(int, string) {
		if tokens++; tokens == 3 {
			cancel()
		}
	}
	_, err = p.Generate(ctx, []string{"the cat"}, cfg)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 3, tokens, "stopped at the next token")
	_, err = p.Generate(ctx, []string{"the cat"}, p.Defaults())
	require.ErrorIs(t, err, context.Canceled)

	bg := context.Background()
	for _, c := range []struct {
		name    string
		prompts []string
		cfg     TextGenerationConfig
		want    string
	}{
		{"no prompts", nil, p.Defaults(), "no prompts"},
		{"too many", make([]string, models.MaxPredictInputs+1), p.Defaults(), "more than 65536"},
		{"too long", []string{"a", strings.Repeat("a", models.MaxPredictTextBytes+1)}, p.Defaults(), "prompt 1 has 16777217 bytes"},
		{"no length", []string{"a"}, TextGenerationConfig{TopP: 1}, "start from TextGeneration.Defaults"},
		{"max_length too short", []string{"the cat sat on"}, TextGenerationConfig{MaxLength: 2, TopP: 1}, "max_length 2 leaves no room"},
	} {
		_, err := p.Generate(bg, c.prompts, c.cfg)
		require.ErrorContains(t, err, c.want, c.name)
	}
}

// savedClassifier writes a 3-label classifier of tok's vocabulary.
func savedTextClassifier(t testing.TB) (string, *Classifier) {
	t.Helper()
	dir, m := savedLM(t, "")
	c, err := NewClassifier(m, []string{"neg", "neu", "pos"})
	require.NoError(t, err)
	require.NoError(t, c.Save(dir))
	return dir, c
}

// The classification pipeline's probabilities are the softmax of the
// classifier's logits (graphrun.ClassLogits, as fine-tuning's evaluation
// reads them), best first; a text past n_positions tokens is read as its
// first n_positions.
func TestTextClassificationEqualsLogits(t *testing.T) {
	dir, _ := savedTextClassifier(t)
	p, err := LoadTextClassification(dir)
	require.NoError(t, err)
	require.Equal(t, 1, p.TopK)
	texts := []string{"the cat sat on the mat", "a dog", "the sun is hot today and the cat", "é"}
	ids := encodeAll(t, p.Tokenizer, texts)
	z, err := graphrun.ClassLogits(p.Model, ids, nil)
	require.NoError(t, err)
	ctx := context.Background()
	for _, batch := range []int{1, 3, 0} {
		p.BatchSize, p.TopK = batch, 0
		got, err := p.Predict(ctx, texts)
		require.NoError(t, err)
		for i, labels := range got {
			want := models.TopLabels(models.Softmax(z[i*3:(i+1)*3]), p.Model.Labels, 0)
			require.Len(t, labels, 3)
			for k := range labels {
				require.Equal(t, want[k].Label, labels[k].Label, "batch %d, text %d", batch, i)
				require.InDelta(t, want[k].Score, labels[k].Score, 1e-6)
			}
		}
	}
	p.TopK = 1
	builds := p.graphs.Builds()
	got, err := p.Predict(ctx, texts)
	require.NoError(t, err)
	require.Len(t, got[0], 1, "top_k 1, the pipeline's default")
	require.Equal(t, builds, p.graphs.Builds(), "no new graph for shapes seen before")

	long := strings.Repeat("the cat sat on the mat ", 20)
	lids := encodeAll(t, p.Tokenizer, []string{long})[0]
	require.Greater(t, len(lids), p.Model.Config.NPositions)
	z, err = graphrun.ClassLogits(p.Model, [][]int{lids[:p.Model.Config.NPositions]}, nil)
	require.NoError(t, err)
	probs, err := p.Probabilities(ctx, []string{long})
	require.NoError(t, err)
	require.InDeltaSlice(t, models.Softmax(z), probs[0], 1e-9)

	for _, c := range []struct {
		name  string
		texts []string
		want  string
	}{
		{"none", nil, "no texts"},
		{"empty", []string{"a", ""}, "text 1 is empty"},
		{"too long", []string{strings.Repeat("a", models.MaxPredictTextBytes+1)}, "more than 16777216"},
	} {
		_, err := p.Predict(ctx, c.texts)
		require.ErrorContains(t, err, c.want, c.name)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = p.Predict(cancelled, texts)
	require.ErrorIs(t, err, context.Canceled)

	lm, _ := savedLM(t, "")
	_, err = LoadTextClassification(lm)
	require.ErrorContains(t, err, "gpt")
	_, err = LoadTextClassification(dir, models.WithLabels("a", "b"))
	require.ErrorContains(t, err, "leave models.WithLabels out")
}

// The pipelines' softmax and top-k, by hand: probabilities that sum to
// 1 in the logits' order, then the k best, ties in label order.
func TestSoftmaxTopLabels(t *testing.T) {
	p := models.Softmax([]float64{0, 0, 1000})
	require.Equal(t, []float64{0, 0, 1}, p)
	p = models.Softmax([]float64{1, 2, 2})
	require.InDelta(t, 1, p[0]+p[1]+p[2], 1e-15)
	require.InDelta(t, 1/(1+2*2.718281828459045), p[0], 1e-12)
	require.Equal(t, []models.Label{{Label: "b", Score: p[1]}, {Label: "c", Score: p[2]}}, models.TopLabels(p, []string{"a", "b", "c"}, 2))
	require.Len(t, models.TopLabels(p, []string{"a", "b", "c"}, 9), 3)
}

// TestWritePipelineTestdata writes testdata/pipeline (a tiny untrained
// language model of a character tokenizer, readable whatever it writes,
// with a generation_config.json: greedy) and testdata/classifier (a
// 3-label classifier on it), which the Examples load. It runs only with
// ZOO_WRITE_TESTDATA=1.
func TestWritePipelineTestdata(t *testing.T) {
	if os.Getenv("ZOO_WRITE_TESTDATA") != "1" {
		t.Skip("set ZOO_WRITE_TESTDATA=1 to rewrite testdata/pipeline and testdata/classifier")
	}
	tok := charTokenizer(t, "the cat sat on the mat, a dog ran in the park.")
	cfg := Micro()
	cfg.VocabSize, cfg.BOSTokenID, cfg.EOSTokenID = tok.VocabSize(), 0, 0
	cfg.InitializerRange = 0.3
	m, err := New(cfg, layers.WithSeed(11))
	require.NoError(t, err)
	require.NoError(t, models.SaveText("testdata/pipeline", m, tok))
	gen := "{\n  \"do_sample\": false,\n  \"max_new_tokens\": 12\n}\n"
	require.NoError(t, os.WriteFile(filepath.Join("testdata/pipeline", decode.GenerationFile), []byte(gen), 0o644))
	c, err := NewClassifier(m, []string{"negative", "neutral", "positive"})
	require.NoError(t, err)
	require.NoError(t, models.SaveText("testdata/classifier", c, tok))
}

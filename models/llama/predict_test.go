package llama

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/internal/racetest"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/internal/graphrun"
)

// pipelineConfig is Tiny with the vocabulary of datasets' Llama 2
// byte-fallback BPE test tokenizer (2350 tokens, "<s> $A" template,
// <s> 1 and </s> 2).
func pipelineConfig() Config {
	c := Tiny()
	c.VocabSize, c.BOSTokenID, c.EOSTokenID = 2350, ptr(1), IDs(2)
	return c
}

// copyTokenizer writes datasets' Llama 2 test tokenizer into dir.
func copyTokenizer(t testing.TB, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "datasets", "testdata", "llama_bpe.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644))
}

// savedLM saves a tiny LLaMA language model with its tokenizer and, when
// gen is not empty, a generation_config.json holding gen.
func savedLM(t testing.TB, gen string) (string, *ForCausalLM) {
	t.Helper()
	m, err := NewForCausalLM(pipelineConfig(), layers.WithSeed(5), layers.WithInitStd(0.3))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, m.Save(dir))
	copyTokenizer(t, dir)
	if gen != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, decode.GenerationFile), []byte(gen), 0o644))
	}
	return dir, m
}

// savedTextClassifier saves a tiny LlamaForSequenceClassification with
// three labels and its tokenizer.
func savedTextClassifier(t testing.TB) (string, *ForSequenceClassification) {
	t.Helper()
	c, err := NewForSequenceClassification(pipelineConfig(), []string{"neg", "neu", "pos"}, layers.WithSeed(6), layers.WithInitStd(0.3))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, c.Save(dir))
	copyTokenizer(t, dir)
	return dir, c
}

var pipelinePrompts = []string{"Hello world", "the cat", "", "é€ and more words"}

// The generation pipeline's texts are the prompts (tokenized with the
// template, so <s> first) continued by ForCausalLM's Generate and
// BeamSearch, without the EOS token, in batches of any size; streamed
// pieces joined are the continuation.
func TestTextGenerationEqualsGenerate(t *testing.T) {
	dir, m := savedLM(t, "")
	p, err := LoadTextGeneration(dir)
	require.NoError(t, err)
	ids := make([][]int, len(pipelinePrompts))
	for i, s := range pipelinePrompts {
		ids[i], err = encode(p.Tokenizer, s)
		require.NoError(t, err)
		require.Equal(t, 1, ids[i][0], "the template prepends <s>")
	}
	require.Equal(t, []int{1}, ids[2], "an empty prompt is <s> alone")
	base := p.Defaults()
	require.Equal(t, []int{2}, base.EOS)
	base.MaxNewTokens = 7
	greedy, sampled, beam := base, base, base
	greedy.Temperature = 0
	sampled.Temperature, sampled.TopK, sampled.Seed = 1.3, 20, 4
	beam.Beam, beam.EOS = 3, []int{2, 7, 9}
	for name, cfg := range map[string]TextGenerationConfig{"greedy": greedy, "sampled": sampled, "beam": beam} {
		var want [][]int
		if cfg.Beam > 1 {
			hyps, err := m.BeamSearch(ids, BeamConfig{BeamConfig: decode.BeamConfig{Beam: 3, MaxNewTokens: 7, EOS: cfg.EOS, EarlyStopping: cfg.EarlyStopping}})
			require.NoError(t, err)
			for _, h := range hyps {
				want = append(want, h[0].Tokens)
			}
		} else {
			sc := decode.SampleConfig{MaxNewTokens: 7, Temperature: cfg.Temperature, TopK: cfg.TopK, TopP: 1, Seed: cfg.Seed, EOS: cfg.EOS}
			want, err = m.Generate(ids, GenerateConfig{SampleConfig: sc})
			require.NoError(t, err)
		}
		for _, batch := range []int{0, 1, 3} {
			if name == "sampled" && batch != 0 {
				continue // a sampled row depends on its place in its batch
			}
			p.BatchSize = batch
			pieces := make([][]string, len(pipelinePrompts))
			cfg.OnText = func(i int, s string) { pieces[i] = append(pieces[i], s) }
			got, err := p.Generate(context.Background(), pipelinePrompts, cfg)
			require.NoError(t, err)
			require.Len(t, got, len(pipelinePrompts))
			for i, g := range got {
				tokens := models.WithoutEOS(want[i], cfg.EOS)
				require.Equal(t, tokens, g.Tokens, "%s batch %d prompt %d", name, batch, i)
				text, err := p.Tokenizer.Decode(tokens)
				require.NoError(t, err)
				require.Equal(t, pipelinePrompts[i]+text, g.Text, "%s batch %d prompt %d", name, batch, i)
				require.Equal(t, text, strings.Join(pieces[i], ""), "%s batch %d prompt %d: streamed", name, batch, i)
			}
		}
	}
	cfg := greedy
	cfg.NewTextOnly = true
	got, err := p.Generate(context.Background(), pipelinePrompts[:1], cfg)
	require.NoError(t, err)
	text, err := p.Tokenizer.Decode(got[0].Tokens)
	require.NoError(t, err)
	require.Equal(t, text, got[0].Text)
}

// Defaults reads generation_config.json: max_new_tokens, do_sample, and
// eos_token_id as an int or a list, over config.json's.
func TestTextGenerationDefaults(t *testing.T) {
	for _, tc := range []struct {
		gen  string
		want TextGenerationConfig
	}{
		{"", TextGenerationConfig{MaxNewTokens: DefaultMaxNewTokens, Temperature: DefaultTemperature, TopP: 1, Seed: DefaultSeed, Beam: 1, EarlyStopping: decode.StopAtBeam, EOS: []int{2}}},
		{`{"eos_token_id": [2, 5], "max_new_tokens": 4, "do_sample": false}`, TextGenerationConfig{MaxNewTokens: 4, TopP: 1, Seed: DefaultSeed, Beam: 1, EarlyStopping: decode.StopAtBeam, EOS: []int{2, 5}}},
		{`{"eos_token_id": 7, "do_sample": true, "top_p": 0.9, "max_length": 20}`, TextGenerationConfig{MaxLength: 20, Temperature: 1, TopK: 50, TopP: 0.9, Seed: DefaultSeed, Beam: 1, EarlyStopping: decode.StopAtBeam, EOS: []int{7}}},
	} {
		dir, _ := savedLM(t, tc.gen)
		p, err := LoadTextGeneration(dir)
		require.NoError(t, err, tc.gen)
		require.Equal(t, tc.want, p.Defaults(), tc.gen)
	}
	dir, _ := savedLM(t, `{"eos_token_id": "x"}`)
	_, err := LoadTextGeneration(dir)
	require.ErrorContains(t, err, "eos_token_id")
}

// Generation stops when its context is done and refuses what it cannot
// answer, naming it.
func TestTextGenerationRefuses(t *testing.T) {
	dir, _ := savedLM(t, "")
	p, err := LoadTextGeneration(dir)
	require.NoError(t, err)
	cfg := p.Defaults()
	cfg.MaxNewTokens = 5
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Generate(ctx, []string{"hi"}, cfg)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	// Cancelled between tokens: the stepper sees it.
	ctx, cancel = context.WithCancel(context.Background())
	c2 := cfg
	c2.OnText = func(int, string) { cancel() }
	c2.Temperature = 0
	_, err = p.Generate(ctx, []string{"hi"}, c2)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.ErrorContains(t, err, "llama: stopped")

	long := strings.Repeat("a b ", 100)
	for _, tc := range []struct {
		prompts []string
		cfg     TextGenerationConfig
		msg     string
	}{
		{nil, cfg, "no prompts"},
		{make([]string, models.MaxPredictInputs+1), cfg, "models.MaxPredictInputs"},
		{[]string{strings.Repeat("a", models.MaxPredictTextBytes+1)}, cfg, "models.MaxPredictTextBytes"},
		{[]string{"hi"}, TextGenerationConfig{}, "max_new_tokens 0 and max_length 0"},
		{[]string{"hi"}, TextGenerationConfig{MaxNewTokens: MaxNewTokensLimit + 1}, "MaxNewTokensLimit"},
		{[]string{"hi"}, TextGenerationConfig{MaxLength: 2, TopP: 1}, "max_length 2 leaves no room"},
		{[]string{long}, cfg, "max_position_embeddings"},
	} {
		_, err := p.Generate(context.Background(), tc.prompts, tc.cfg)
		require.ErrorContains(t, err, tc.msg)
	}
}

// The classification pipeline's probabilities are the softmax of the
// classifier's logits at each text's last token, computed one text at a
// time through Logits; a text past the model's length is read as its
// first tokens; ties and top_k as models.TopLabels.
func TestTextClassificationEqualsLogits(t *testing.T) {
	dir, c := savedTextClassifier(t)
	p, err := LoadTextClassification(dir)
	require.NoError(t, err)
	require.Equal(t, 1, p.TopK)
	texts := []string{"the cat sat on the mat", "a dog", strings.Repeat("the sun is hot ", 30), "é"}
	want := make([][]float64, len(texts))
	for i, s := range texts {
		ids, err := encode(p.Tokenizer, s)
		require.NoError(t, err)
		ids = ids[:min(len(ids), c.MaxLength())]
		g := c.Store.NewGraph()
		in, err := g.IntConstant("ids", ids, 1, len(ids))
		require.NoError(t, err)
		last, err := g.IntConstant("last", []int{len(ids) - 1}, 1)
		require.NoError(t, err)
		z, err := c.Logits(g, Inputs{IDs: in}, last)
		require.NoError(t, err)
		v, err := graphrun.Run(g, z)
		require.NoError(t, err)
		want[i] = models.Softmax(v)
	}
	for _, batch := range []int{1, 3, 0} {
		p.BatchSize, p.TopK = batch, 0
		got, err := p.Predict(context.Background(), texts)
		require.NoError(t, err)
		for i, labels := range got {
			wl := models.TopLabels(want[i], c.Labels, 0)
			require.Len(t, labels, 3)
			for k := range labels {
				require.Equal(t, wl[k].Label, labels[k].Label, "batch %d text %d", batch, i)
				require.InDelta(t, wl[k].Score, labels[k].Score, 1e-6, "batch %d text %d", batch, i)
			}
		}
	}
	p.TopK = 2
	got, err := p.Predict(context.Background(), texts[:1])
	require.NoError(t, err)
	require.Len(t, got[0], 2)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Predict(ctx, texts)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	for _, tc := range []struct {
		texts []string
		msg   string
	}{
		{nil, "no texts"},
		{[]string{"a", ""}, "text 1 is empty"},
		{make([]string, models.MaxPredictInputs+1), "models.MaxPredictInputs"},
		{[]string{strings.Repeat("a", models.MaxPredictTextBytes+1)}, "models.MaxPredictTextBytes"},
	} {
		_, err := p.Predict(context.Background(), tc.texts)
		require.ErrorContains(t, err, tc.msg)
	}
	_, err = LoadTextClassification(dir, models.WithLabels("a", "b"))
	require.ErrorContains(t, err, "models.WithLabels")
}

// A tokenizer with more tokens than vocab_size is refused at load.
func TestPipelineTokenizerTooLarge(t *testing.T) {
	c := pipelineConfig()
	c.VocabSize = 100
	m, err := NewForCausalLM(c, layers.WithSeed(1))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, m.Save(dir))
	copyTokenizer(t, dir)
	_, err = LoadTextGeneration(dir)
	require.ErrorContains(t, err, "vocab_size is 100")
}

// TestConcurrentPredict runs the text-generation pipeline (greedy,
// sampled, streaming, beam search) and the text-classification pipeline
// from 8 goroutines at once, and checks that every answer equals the same
// call made alone. Run it with -race (the CI does).
func TestConcurrentPredict(t *testing.T) {
	dir, _ := savedLM(t, `{"do_sample": false, "max_new_tokens": 5}`)
	gen, err := LoadTextGeneration(dir)
	require.NoError(t, err)
	gen.BatchSize = 2
	cdir, _ := savedTextClassifier(t)
	cls, err := LoadTextClassification(cdir)
	require.NoError(t, err)
	cls.BatchSize = 2
	ctx := context.Background()
	prompts := pipelinePrompts[:3]
	greedy := gen.Defaults()
	sampled := greedy
	sampled.Temperature, sampled.Seed = 1, 3
	beam := greedy
	beam.Beam = 2
	racetest.Check(t, 2,
		racetest.Call{Name: "Generate greedy", Run: func() (any, error) { return gen.Generate(ctx, prompts, greedy) }},
		racetest.Call{Name: "Generate sampled", Run: func() (any, error) { return gen.Generate(ctx, prompts, sampled) }},
		racetest.Call{Name: "Generate streamed", Run: func() (any, error) {
			var b strings.Builder
			cfg := greedy
			cfg.OnText = func(_ int, s string) { b.WriteString(s) }
			out, err := gen.Generate(ctx, prompts, cfg)
			return []any{out, b.String()}, err
		}},
		racetest.Call{Name: "Generate beam", Run: func() (any, error) { return gen.Generate(ctx, prompts, beam) }},
		racetest.Call{Name: "Predict", Run: func() (any, error) { return cls.Predict(ctx, []string{"the cat", "a dog sat", "é"}) }},
	)
}

// The classification pipeline compiles one graph per batch size and
// rounded length: a second call with the same shapes compiles nothing and
// gives the same probabilities, texts of nearby lengths share a graph, and
// ReleaseGraphs frees them.
func TestTextClassificationReusesGraphs(t *testing.T) {
	dir, _ := savedTextClassifier(t)
	p, err := LoadTextClassification(dir)
	require.NoError(t, err)
	ctx := context.Background()
	texts := []string{"the cat sat on the mat", "a dog", "the sun is hot today", "é"}
	p.BatchSize = 2
	first, err := p.Probabilities(ctx, texts)
	require.NoError(t, err)
	builds := p.graphs.Builds()
	require.Positive(t, builds)
	require.LessOrEqual(t, builds, 2, "two batches of two")
	again, err := p.Probabilities(ctx, texts)
	require.NoError(t, err)
	require.Equal(t, first, again)
	require.Equal(t, builds, p.graphs.Builds(), "no new graph for shapes seen before")
	n, _ := p.graphs.Len()
	require.Equal(t, builds, n)

	_, err = p.Probabilities(ctx, []string{"a cat", "a dog"})
	require.NoError(t, err)
	require.Equal(t, builds, p.graphs.Builds(), "two short texts round up to a length seen before")

	p.ReleaseGraphs()
	n, _ = p.graphs.Len()
	require.Zero(t, n)
	_, err = p.Probabilities(ctx, texts[:1])
	require.NoError(t, err)
	require.Equal(t, builds+1, p.graphs.Builds(), "released graphs are compiled again")
}

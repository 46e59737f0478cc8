package gpt

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/racetest"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/internal/graphrun"
)

// TestConcurrentInference runs GPT's inference entry points — Generate
// (greedy, sampled, without the KV cache, past the context with the
// sliding window), BeamSearch, HiddenStates, Attentions and the
// classifier's ClassLogits — on one
// model from 8 goroutines at once, and checks that every answer equals the
// same call made alone. Calls of the same shapes compete for the model's
// cached graphs; the classifier shares the language model's store. Run it
// with -race (the CI does).
func TestConcurrentInference(t *testing.T) {
	cfg := Micro()
	cfg.InitializerRange = 0.3 // peaked, varied logits
	m, err := New(cfg, layers.WithSeed(7))
	require.NoError(t, err)
	clf, err := NewClassifier(m, []string{"no", "yes", "maybe"})
	require.NoError(t, err)
	prompts := [][]int{{5, 17, 3}, {40, 2}}
	long := [][]int{make([]int, 30)} // 30 + 6 tokens pass the 32-token context
	for i := range long[0] {
		long[0][i] = i + 1
	}
	nocache := Greedy(6)
	nocache.NoCache = true
	racetest.Check(t, 2,
		racetest.Call{Name: "Generate greedy", Run: func() (any, error) { return m.Generate(prompts, Greedy(6)) }},
		racetest.Call{Name: "Generate sampled", Run: func() (any, error) { return m.Generate(prompts, Sampling(6, 1, 3)) }},
		racetest.Call{Name: "Generate one prompt", Run: func() (any, error) { return m.Generate(prompts[:1], Sampling(6, 0.7, 9)) }},
		racetest.Call{Name: "Generate without the cache", Run: func() (any, error) { return m.Generate(prompts, nocache) }},
		racetest.Call{Name: "Generate sliding window", Run: func() (any, error) { return m.Generate(long, Greedy(6)) }},
		racetest.Call{Name: "BeamSearch", Run: func() (any, error) {
			return m.BeamSearch(prompts, BeamConfig{Beam: 3, NBest: 2, MaxNewTokens: 5, LengthPenalty: 0.6})
		}},
		racetest.Call{Name: "Classifier", Run: func() (any, error) { return graphrun.ClassLogits(clf, prompts, nil) }},
		racetest.Call{Name: "HiddenStates", Run: func() (any, error) { return m.HiddenStates(prompts[0]) }},
		racetest.Call{Name: "Attentions", Run: func() (any, error) { return m.Attentions(prompts[1]) }},
	)
}

// TestConcurrentPredict runs the text-generation pipeline (greedy,
// sampled, streaming, beam search) and the text-classification pipeline,
// one of each shared, from 8 goroutines at once, and checks that every
// answer equals the same call made alone. Run it with -race (the CI does).
func TestConcurrentPredict(t *testing.T) {
	dir, _ := savedLM(t, `{"do_sample": false, "max_new_tokens": 6}`)
	gen, err := LoadTextGeneration(dir)
	require.NoError(t, err)
	gen.BatchSize = 2
	cdir, _ := savedTextClassifier(t)
	clf, err := LoadTextClassification(cdir)
	require.NoError(t, err)
	clf.BatchSize, clf.TopK = 2, 0
	prompts := []string{"the cat", "a dog ran", "é"}
	ctx := context.Background()
	greedy := gen.Defaults()
	sampled := greedy
	sampled.Temperature, sampled.Seed = 0.9, 4
	beam := greedy
	beam.Beam = 2
	streamed := func(cfg TextGenerationConfig) func() (any, error) {
		return func() (any, error) {
			var pieces []string // this call's own
			c := cfg
			c.OnText = func(p int, s string) { pieces = append(pieces, s) }
			out, err := gen.Generate(ctx, prompts, c)
			return []any{out, pieces}, err
		}
	}
	racetest.Check(t, 2,
		racetest.Call{Name: "TextGeneration greedy", Run: func() (any, error) { return gen.Generate(ctx, prompts, greedy) }},
		racetest.Call{Name: "TextGeneration sampled", Run: func() (any, error) { return gen.Generate(ctx, prompts, sampled) }},
		racetest.Call{Name: "TextGeneration streamed", Run: streamed(sampled)},
		racetest.Call{Name: "TextGeneration beam", Run: func() (any, error) { return gen.Generate(ctx, prompts[:2], beam) }},
		racetest.Call{Name: "TextClassification", Run: func() (any, error) { return clf.Predict(ctx, prompts) }},
	)
}

package gpt

import (
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

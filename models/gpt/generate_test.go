package gpt

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

func microModel(t *testing.T, dt tensor.Dtype) *Model {
	t.Helper()
	cfg := Micro()
	cfg.InitializerRange = 0.3 // large weights: peaked, varied logits
	m, err := New(cfg, layers.WithSeed(7), layers.WithDtype(dt))
	require.NoError(t, err)
	return m
}

// With a seed, the KV-cached path yields exactly the tokens of the uncached
// path: greedy and sampled, one prompt and a left-padded batch, and past the
// context length into the sliding window.
func TestCachedEqualsUncached(t *testing.T) {
	m := microModel(t, tensor.Float64)
	prompts := [][]int{{5, 17, 3, 88, 1, 2, 9}, {40}, {7, 7, 7, 60}}
	for _, c := range []struct {
		name string
		cfg  GenerateConfig
	}{
		{"greedy", Greedy(12)},
		{"sampled", Sampling(12, 0.9, 42)},
		{"top_k", GenerateConfig{MaxNewTokens: 12, Temperature: 1.3, TopK: 5, TopP: 1, Seed: 3}},
		{"top_p", GenerateConfig{MaxNewTokens: 12, Temperature: 1, TopP: 0.8, Seed: 4}},
		{"sliding_window", Sampling(40, 1, 5)}, // 7 + 40 tokens overflow the 32-token context
	} {
		t.Run(c.name, func(t *testing.T) {
			cached, err := m.Generate(prompts, c.cfg)
			require.NoError(t, err)
			nc := c.cfg
			nc.NoCache = true
			uncached, err := m.Generate(prompts, nc)
			require.NoError(t, err)
			require.Equal(t, uncached, cached)
			for r := range prompts {
				require.Len(t, cached[r], c.cfg.MaxNewTokens)
			}
		})
	}
}

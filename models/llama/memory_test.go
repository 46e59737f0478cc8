package llama

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/internal/graphtest"
	"github.com/d73a19ff/zoo/layers"
)

// A decoding whose graphs and KV caches cannot fit, by its prompts or its
// beams, is a clear error from Generate and BeamSearch before anything is
// built: without the estimate the first would allocate the prefill's
// (2^17, 1, 2^18) logits, the second 2^30 rows of beams and KV caches.
func TestDecodeRefusesBeforeAllocating(t *testing.T) {
	c := Tiny()
	c.VocabSize = 1 << 18
	m, err := NewForCausalLM(c, layers.WithSeed(1))
	require.NoError(t, err)
	many := make([][]int, 1<<17)
	for i := range many {
		many[i] = []int{1}
	}
	for _, tc := range []struct {
		name string
		f    func() error
		want string
	}{
		{"many prompts", func() error {
			_, err := m.Generate(many, GenerateConfig{SampleConfig: decode.Greedy(1)})
			return err
		}, "llama generate: 131072 rows of up to 2 tokens"},
		{"many beams", func() error {
			_, err := m.BeamSearch([][]int{{1}}, BeamConfig{BeamConfig: decode.BeamConfig{Beam: 1 << 30, NBest: 1, MaxNewTokens: 1}})
			return err
		}, "llama beam search: 1073741824 rows of up to 2 tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			graphtest.RefusesBeforeAllocating(t, 256<<20, tc.f, tc.want, "lower the number of prompts, the beam or max_new_tokens")
		})
	}
}

// ActivationBytes grows with the batch and the context, doubles its block part in training, and saturates instead of overflowing.
func TestActivationBytes(t *testing.T) {
	c := Tiny()
	one := c.ActivationBytes(1, 8, false, false)
	require.Positive(t, one)
	require.Equal(t, 2*one, c.ActivationBytes(2, 8, false, false))
	require.Equal(t, 2*one, c.ActivationBytes(1, 8, false, true))
	require.Equal(t, 2*one, c.ActivationBytes(1, 16, false, false))
	require.Greater(t, c.ActivationBytes(1, 8, true, false), one)
	require.Equal(t, int64(1<<63-1), c.ActivationBytes(1<<40, 1<<20, true, true))
	require.Equal(t, int64(8*c.NumHiddenLayers*3*5*c.KVHeads()*c.HeadDimension()), c.KVCacheBytes(3, 5))
}

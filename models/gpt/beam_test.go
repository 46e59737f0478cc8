package gpt

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
)

// A beam of one is greedy decoding, for a left-padded batch and into the
// sliding window.
func TestBeamOfOneIsGreedy(t *testing.T) {
	m := microModel(t, tensor.Float64)
	prompts := [][]int{{5, 17, 3, 88, 1, 2, 9}, {40}, {7, 7, 7, 60}}
	for _, n := range []int{12, 40} { // 7 + 40 tokens overflow the 32-token context
		greedy, err := m.Generate(prompts, Greedy(n))
		require.NoError(t, err)
		beam, err := m.BeamSearch(prompts, BeamConfig{Beam: 1, MaxNewTokens: n, LengthPenalty: 0.6})
		require.NoError(t, err)
		for r := range prompts {
			require.Len(t, beam[r], 1)
			require.Equal(t, greedy[r], beam[r][0].Tokens, "%d tokens, row %d", n, r)
			require.False(t, beam[r][0].Finished)
		}
	}
}

// Hypotheses come best first, with the length penalty applied; a wider
// beam scores at least as well as a beam of one; with an EOS token they
// finish early.
func TestBeamNBestOrder(t *testing.T) {
	m := microModel(t, tensor.Float64)
	prompts := [][]int{{5, 17, 3}, {40, 2}}
	free, err := m.Generate(prompts, Greedy(6))
	require.NoError(t, err)
	cfg := BeamConfig{Beam: 4, NBest: 4, LengthPenalty: 0.6, MaxNewTokens: 8, EOS: []int{free[0][1]}}
	hyps, err := m.BeamSearch(prompts, cfg)
	require.NoError(t, err)
	one := cfg
	one.Beam, one.NBest = 1, 1
	greedy, err := m.BeamSearch(prompts, one)
	require.NoError(t, err)
	finished := 0
	for r, hs := range hyps {
		require.Len(t, hs, 4, "prompt %d", r)
		for j, h := range hs {
			if j > 0 {
				require.GreaterOrEqual(t, hs[j-1].Score, h.Score, "prompt %d hypothesis %d", r, j)
			}
			require.InDelta(t, h.LogProb/decode.LengthPenalty(h.Len(), 0.6), h.Score, 1e-12)
			require.Less(t, h.LogProb, 0.0)
			if h.Finished {
				finished++
				require.True(t, h.EOS)
			}
		}
		require.GreaterOrEqual(t, hs[0].Score, greedy[r][0].Score-1e-12, "prompt %d", r)
	}
	require.Positive(t, finished)
}

// The KV cache, reordered as beams move, gives the hypotheses of rerunning
// every row: one prompt, a left-padded batch, and past the context into
// the sliding window.
func TestBeamCachedEqualsUncached(t *testing.T) {
	m := microModel(t, tensor.Float64)
	for _, c := range []struct {
		name    string
		prompts [][]int
		cfg     BeamConfig
	}{
		{"one", [][]int{{5, 17, 3}}, BeamConfig{Beam: 3, NBest: 3, MaxNewTokens: 10}},
		{"batch", [][]int{{5, 17, 3, 88, 1, 2, 9}, {40}, {7, 7, 7, 60}}, BeamConfig{Beam: 4, NBest: 2, LengthPenalty: 1, MaxNewTokens: 10, EOS: []int{9, 60}}},
		{"sliding_window", [][]int{{5, 17, 3, 88, 1, 2, 9}, {40}}, BeamConfig{Beam: 3, NBest: 3, LengthPenalty: 0.6, MaxNewTokens: 30}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cached, err := m.BeamSearch(c.prompts, c.cfg)
			require.NoError(t, err)
			nc := c.cfg
			nc.NoCache = true
			uncached, err := m.BeamSearch(c.prompts, nc)
			require.NoError(t, err)
			require.Equal(t, len(uncached), len(cached))
			for r := range cached {
				require.Len(t, cached[r], len(uncached[r]))
				for j := range cached[r] {
					require.Equal(t, uncached[r][j].Tokens, cached[r][j].Tokens, "prompt %d hypothesis %d", r, j)
					require.InDelta(t, uncached[r][j].Score, cached[r][j].Score, 1e-9)
				}
			}
		})
	}
}

// A prompt decoded in a batch gets the hypotheses it gets alone.
func TestBeamBatchEqualsSingle(t *testing.T) {
	m := microModel(t, tensor.Float64)
	prompts := [][]int{{5, 17, 3, 88, 1, 2, 9}, {40}, {7, 7, 7, 60}}
	cfg := BeamConfig{Beam: 3, NBest: 3, LengthPenalty: 0.6, MaxNewTokens: 8}
	batch, err := m.BeamSearch(prompts, cfg)
	require.NoError(t, err)
	for r, p := range prompts {
		one, err := m.BeamSearch([][]int{p}, cfg)
		require.NoError(t, err)
		for j := range one[0] {
			require.Equal(t, one[0][j].Tokens, batch[r][j].Tokens, "prompt %d hypothesis %d", r, j)
			require.InDelta(t, one[0][j].Score, batch[r][j].Score, 1e-9)
		}
	}
}

func TestBeamBadInput(t *testing.T) {
	m := microModel(t, tensor.Float32)
	for _, c := range []struct {
		prompts [][]int
		cfg     BeamConfig
		want    string
	}{
		{[][]int{{1}}, BeamConfig{Beam: 0, MaxNewTokens: 3}, "beam size 0"},
		{[][]int{{1}}, BeamConfig{Beam: 2, NBest: 3, MaxNewTokens: 3}, "n-best 3"},
		{[][]int{{1}}, BeamConfig{Beam: 2, MaxNewTokens: 0}, "max_new_tokens 0"},
		{[][]int{{1}}, BeamConfig{Beam: 2, MaxNewTokens: 3, LengthPenalty: -1}, "length penalty -1"},
		{[][]int{{1}}, BeamConfig{Beam: 2, MaxNewTokens: 3, StopStrings: []string{"x"}}, "need a Decode"},
		{[][]int{{1, 96}}, BeamConfig{Beam: 2, MaxNewTokens: 3}, "id 96, outside the vocabulary [0, 96)"},
		{[][]int{{}}, BeamConfig{Beam: 2, MaxNewTokens: 3}, "prompt 0 is empty"},
		{nil, BeamConfig{Beam: 2, MaxNewTokens: 3}, "no prompts"},
		{[][]int{make([]int, 30)}, BeamConfig{Beam: 2, MaxNewTokens: 5, NoSlidingWindow: true}, "sliding window is off"},
	} {
		_, err := m.BeamSearch(c.prompts, c.cfg)
		require.ErrorContains(t, err, c.want)
	}
}

// BenchmarkBeamSearch is beam search of 32 tokens after a 16-token prompt,
// 4 beams, batch 1, through the KV cache.
func BenchmarkBeamSearch(b *testing.B) {
	m, err := New(benchConfig(), layers.WithSeed(1))
	if err != nil {
		b.Fatal(err)
	}
	prompt := make([]int, 16)
	for i := range prompt {
		prompt[i] = i * 7
	}
	b.Run("V512_d256_h4_L4_prompt16_new32_beam4_B1", func(b *testing.B) {
		cfg := BeamConfig{Beam: 4, LengthPenalty: 0.6, MaxNewTokens: 32}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.BeamSearch([][]int{prompt}, cfg); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(32*b.N), "ms/step")
	})
}

// The early-stopping mode reaches the shared beam search.
func TestBeamConfigEarlyStopping(t *testing.T) {
	require.Equal(t, decode.StopNever, BeamConfig{EarlyStopping: decode.StopNever}.beam().EarlyStopping)
}

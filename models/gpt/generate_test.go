package gpt

import (
	"strings"
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

// A left-padded batch gives each row the tokens it gets alone.
func TestBatchEqualsSingle(t *testing.T) {
	m := microModel(t, tensor.Float64)
	prompts := [][]int{{5, 17, 3, 88, 1, 2, 9}, {40}, {7, 7, 7, 60}}
	batch, err := m.Generate(prompts, Greedy(10))
	require.NoError(t, err)
	for r, p := range prompts {
		one, err := m.Generate([][]int{p}, Greedy(10))
		require.NoError(t, err)
		require.Equal(t, one[0], batch[r], "row %d", r)
	}
}

// Generation stops a row at an EOS token or a stop string, and streams every
// token as it is produced.
func TestStopsAndStreaming(t *testing.T) {
	m := microModel(t, tensor.Float64)
	prompts := [][]int{{5, 17, 3}, {40, 2}}
	free, err := m.Generate(prompts, Greedy(10))
	require.NoError(t, err)

	eos := free[0][3]
	cfg := Greedy(10)
	cfg.EOS = []int{eos}
	var streamed [2][]int
	cfg.OnToken = func(row, tok int) { streamed[row] = append(streamed[row], tok) }
	got, err := m.Generate(prompts, cfg)
	require.NoError(t, err)
	first := 0
	for first < len(free[0]) && free[0][first] != eos {
		first++
	}
	require.Equal(t, free[0][:first+1], got[0], "row 0 stops after the EOS token, keeping it")
	require.Equal(t, got[0], streamed[0])
	require.Equal(t, got[1], streamed[1])

	cfg = Greedy(10)
	cfg.Decode = func(toks []int) string {
		s := ""
		for _, tk := range toks {
			s += string(rune('A' + tk%26))
		}
		return s
	}
	cfg.StopStrings = []string{cfg.Decode(free[1][2:4])}
	got, err = m.Generate(prompts, cfg)
	require.NoError(t, err)
	stop := 1
	for !strings.Contains(cfg.Decode(free[1][:stop]), cfg.StopStrings[0]) {
		stop++
	}
	require.Equal(t, free[1][:stop], got[1], "row 1 stops once its text holds the stop string")
	require.Less(t, stop, 10)
}

// Each bad input is an error that names the problem.
func TestGenerateBadInput(t *testing.T) {
	m := microModel(t, tensor.Float32)
	cases := []struct {
		prompts [][]int
		cfg     GenerateConfig
		want    string
	}{
		{[][]int{{1, 96}}, Greedy(2), "id 96, outside the vocabulary [0, 96)"},
		{[][]int{{-1}}, Greedy(2), "id -1"},
		{[][]int{{}}, Greedy(2), "prompt 0 is empty"},
		{nil, Greedy(2), "no prompts"},
		{[][]int{make([]int, 33)}, GenerateConfig{MaxNewTokens: 1, TopP: 1, NoSlidingWindow: true}, "more than the context of 32"},
		{[][]int{{1}}, GenerateConfig{MaxNewTokens: 1, TopP: 0}, "top_p 0 is outside (0, 1]"},
		{[][]int{{1}}, GenerateConfig{MaxNewTokens: 1, TopP: 1.5}, "top_p 1.5"},
		{[][]int{{1}}, GenerateConfig{MaxNewTokens: 1, TopP: 1, Temperature: -1}, "temperature -1"},
		{[][]int{{1}}, GenerateConfig{MaxNewTokens: 0, TopP: 1}, "max_new_tokens 0"},
		{[][]int{{1}}, GenerateConfig{MaxNewTokens: 1, TopP: 1, TopK: -2}, "top_k -2"},
		{[][]int{{1}}, GenerateConfig{MaxNewTokens: 1, TopP: 1, StopStrings: []string{"x"}}, "need a Decode"},
		{[][]int{make([]int, 30)}, GenerateConfig{MaxNewTokens: 5, TopP: 1, NoSlidingWindow: true}, "sliding window is off"},
	}
	for _, c := range cases {
		_, err := m.Generate(c.prompts, c.cfg)
		require.ErrorContains(t, err, c.want)
	}
}

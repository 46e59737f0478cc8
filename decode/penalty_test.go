package decode

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRepetitionPenalty is Hugging Face's RepetitionPenaltyLogitsProcessor
// by hand: each token of the row once (1 appears twice), negative scores
// times p, others divided by p, tokens not in the row unchanged.
func TestRepetitionPenalty(t *testing.T) {
	c := Constraints{RepetitionPenalty: 2}
	got := c.process([]int{0, 1, 1, 3}, []float64{2, -1, 0.5, -3, 0}, nil, false)
	require.Equal(t, []float64{1, -2, 0.5, -6, 0}, got)
	c.RepetitionPenalty = 0.5
	got = c.process([]int{4, 0}, []float64{2, -1, 0.5, -3, 0}, nil, false)
	require.Equal(t, []float64{4, -1, 0.5, -3, 0}, got, "p < 1 favours repeats; 0 stays 0")
	for _, off := range []float64{0, 1} {
		require.False(t, Constraints{RepetitionPenalty: off}.active(), "%g is off", off)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		require.ErrorContains(t, Constraints{RepetitionPenalty: bad}.Validate(), "repetition_penalty")
	}
	_, err := Sample(&markov{table: [][]float64{{0, 1}, {1, 0}}}, [][]int{{0}}, SampleConfig{MaxNewTokens: 1, TopP: 1, Constraints: Constraints{RepetitionPenalty: -2}})
	require.ErrorContains(t, err, "repetition_penalty -2")
}

// TestRepetitionPenaltyGolden checks greedy decoding and beam search with
// a repetition penalty against transformers' processor and decoders
// re-implemented in PyTorch (tools/pytorch/repetition_penalty_golden.py →
// testdata/repetition_penalty.json) on a Markov-table model: the same
// tokens, and the best beam's log-probability score.
func TestRepetitionPenaltyGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/repetition_penalty.json")
	require.NoError(t, err)
	var g struct {
		Table [][]float64 `json:"table"`
		N     int         `json:"max_new_tokens"`
		Beam  int         `json:"beam"`
		Cases []struct {
			Prompt      []int   `json:"prompt"`
			Penalty     float64 `json:"penalty"`
			Greedy      []int   `json:"greedy"`
			PlainGreedy []int   `json:"plain_greedy"`
			BeamTokens  []int   `json:"beam"`
			BeamScore   float64 `json:"beam_score"`
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(b, &g))
	changed := 0
	for _, c := range g.Cases {
		m := &markov{table: g.Table}
		cfg := Greedy(g.N)
		cfg.RepetitionPenalty = c.Penalty
		out, err := Sample(m, [][]int{c.Prompt}, cfg)
		require.NoError(t, err)
		require.Equal(t, c.Greedy, out[0], "greedy, prompt %v, penalty %g", c.Prompt, c.Penalty)
		plain, err := Sample(m, [][]int{c.Prompt}, Greedy(g.N))
		require.NoError(t, err)
		require.Equal(t, c.PlainGreedy, plain[0])
		if !equalInts(c.Greedy, c.PlainGreedy) {
			changed++
		}

		hyps, err := BeamSearch(m, [][]int{c.Prompt}, BeamConfig{Beam: g.Beam, MaxNewTokens: g.N, Constraints: Constraints{RepetitionPenalty: c.Penalty}})
		require.NoError(t, err)
		require.Equal(t, c.BeamTokens, hyps[0][0].Tokens, "beam, prompt %v, penalty %g", c.Prompt, c.Penalty)
		require.InDelta(t, c.BeamScore, hyps[0][0].Score, 1e-12)
	}
	require.GreaterOrEqual(t, changed, 3, "the fixture must have cases the penalty changes")
}

func equalInts(a, b []int) bool { return slices.Equal(a, b) }

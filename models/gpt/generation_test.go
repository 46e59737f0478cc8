package gpt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/decode"
)

// TestMaxNewTokensBounded: a limit past MaxNewTokensLimit is an error
// naming it, for sampling and beam search (a billion tokens once reserved
// 8 GB up front, and 4e18 panicked); a limit just under it costs only the
// tokens decoded, here up to the EOS token.
func TestMaxNewTokensBounded(t *testing.T) {
	m := microModel(t, tensor.Float32)
	for _, n := range []int{1_000_000_000, 4e18} {
		_, err := m.Generate([][]int{{1, 2}}, GenerateConfig{MaxNewTokens: n, TopP: 1})
		require.ErrorContains(t, err, "MaxNewTokensLimit")
		_, err = m.BeamSearch([][]int{{1, 2}}, BeamConfig{Beam: 2, MaxNewTokens: n})
		require.ErrorContains(t, err, "MaxNewTokensLimit")
	}
	first, err := m.Generate([][]int{{1, 2}}, Greedy(1))
	require.NoError(t, err)
	out, err := m.Generate([][]int{{1, 2}}, GenerateConfig{MaxNewTokens: MaxNewTokensLimit, TopP: 1, EOS: first[0]})
	require.NoError(t, err)
	require.Equal(t, first[0], out[0])
}

// TestGenerationRulesFromConfig: config.json's bad_words_ids,
// no_repeat_ngram_size and forced_eos_token_id apply to Generate and
// BeamSearch, as transformers' generate applies them; a setting the zoo
// does not implement is refused by name, not ignored; generation_config.json
// wins over config.json.
func TestGenerationRulesFromConfig(t *testing.T) {
	m := microModel(t, tensor.Float64)
	prompt := [][]int{{3, 4, 5}}
	free, err := m.Generate(prompt, Greedy(6))
	require.NoError(t, err)
	eos := m.Config.EOSTokenID
	require.NotEqual(t, eos, free[0][5], "the test needs a model that does not end by itself")

	m.Config.Extra = map[string]json.RawMessage{"forced_eos_token_id": json.RawMessage(`95`),
		"bad_words_ids": json.RawMessage(`[[` + itoa(free[0][0]) + `]]`)}
	got, err := m.Generate(prompt, Greedy(6))
	require.NoError(t, err)
	require.NotEqual(t, free[0][0], got[0][0], "the bad word is banned")
	require.Equal(t, 95, got[0][5], "forced_eos_token_id at the last step")
	hyps, err := m.BeamSearch(prompt, BeamConfig{Beam: 2, NBest: 2, MaxNewTokens: 6, EOS: []int{95}})
	require.NoError(t, err)
	for _, h := range hyps[0] {
		require.True(t, h.EOS, "beam search forces eos too: %v", h.Tokens)
		require.NotEqual(t, free[0][0], h.Tokens[0])
	}

	m.Config.Extra = map[string]json.RawMessage{"encoder_repetition_penalty": json.RawMessage(`1.3`)}
	_, err = m.Generate(prompt, Greedy(6))
	require.ErrorContains(t, err, "encoder_repetition_penalty 1.3 is not supported")
	_, err = m.BeamSearch(prompt, BeamConfig{Beam: 2, MaxNewTokens: 6})
	require.ErrorContains(t, err, "encoder_repetition_penalty")
	m.Config.Extra = map[string]json.RawMessage{"repetition_penalty": json.RawMessage(`0`)}
	_, err = m.Generate(prompt, Greedy(6))
	require.ErrorContains(t, err, "repetition_penalty 0: want a number > 0")
	m.Config.Extra = map[string]json.RawMessage{"repetition_penalty": json.RawMessage(`1.3`)}
	_, err = m.Generate(prompt, Greedy(6))
	require.NoError(t, err, "repetition_penalty is applied (decode's TestRepetitionPenaltyGolden checks how)")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, decode.GenerationFile), []byte(`{"no_repeat_ngram_size": 2}`), 0o644))
	g, err := ReadGeneration(dir, m.Config)
	require.NoError(t, err, "generation_config.json is read instead of config.json")
	require.Equal(t, 2, g.NoRepeatNGramSize)
	// config.json's repetition_penalty is not read then, as in
	// transformers, but it is named, not ignored without a word.
	require.Equal(t, []string{"config.json's repetition_penalty 1.3 is not read: generation_config.json is (absent there), as transformers' generate reads it; set it there to apply it"}, g.Notes)
	_, err = m.Generate(prompt, GenerateConfig{MaxNewTokens: 6, TopP: 1, Generation: &g})
	require.NoError(t, err)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestBeamOverflow: a beam whose rows (prompts × beam) overflow int is an
// error, not a makeslice panic.
func TestBeamOverflow(t *testing.T) {
	m := microModel(t, tensor.Float32)
	for _, k := range []int{1 << 62, 4e18} {
		_, err := m.BeamSearch([][]int{{1, 2}, {3}}, BeamConfig{Beam: k, MaxNewTokens: 3})
		require.ErrorContains(t, err, "beam", "overflow, or too many rows for memory")
		_, err = decode.BeamSearch(decode.StepFunc(func([][]int) ([][]float64, error) { return nil, nil }), [][]int{{1}, {2}, {3}}, decode.BeamConfig{Beam: k, MaxNewTokens: 3}) // 3 × 4e18 overflows too
		require.ErrorContains(t, err, "overflow")
	}
}

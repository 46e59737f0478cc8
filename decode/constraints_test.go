package decode

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSampleHugeMaxNewTokens: a limit of 2^62 tokens decodes as far as the
// EOS token, reserving nothing up front (it once reserved every requested
// token and panicked or ran out of memory).
func TestSampleHugeMaxNewTokens(t *testing.T) {
	for _, n := range []int{1 << 62, math.MaxInt - 10} {
		out, err := Sample(&markov{table: trap}, [][]int{{0}, {4}}, SampleConfig{MaxNewTokens: n, TopP: 1, EOS: []int{1}, Constraints: Constraints{}})
		require.NoError(t, err)
		require.Equal(t, []int{2, 1}, out[0])
	}
}

// TestForcedEOS: at the last step every row ends with the forced token,
// greedy and beam alike, and in beam search the forced token adds 0 to
// log P, as ForcedEOSTokenLogitsProcessor sets it.
func TestForcedEOS(t *testing.T) {
	table := randomTable(7, 2, 3)
	const eos = 1
	for i := range table {
		table[i][eos] = -20 // the model itself almost never ends
	}
	out, err := Sample(&markov{table: table}, [][]int{{0}, {3}}, SampleConfig{MaxNewTokens: 4, TopP: 1, EOS: []int{eos},
		Constraints: Constraints{ForcedEOS: []int{eos}}})
	require.NoError(t, err)
	for r, o := range out {
		require.Len(t, o, 4)
		require.Equal(t, eos, o[3], "row %d ends with the forced eos", r)
	}
	free, err := BeamSearch(&markov{table: table}, [][]int{{0}}, BeamConfig{Beam: 3, NBest: 3, MaxNewTokens: 4, EOS: []int{eos}})
	require.NoError(t, err)
	for _, h := range free[0] {
		require.False(t, h.EOS, "without forcing, no hypothesis ends with eos")
	}
	hyps, err := BeamSearch(&markov{table: table}, [][]int{{0}}, BeamConfig{Beam: 3, NBest: 3, MaxNewTokens: 4, EOS: []int{eos},
		LengthPenaltyStyle: HFPenalty, LengthPenalty: 1, Constraints: Constraints{ForcedEOS: []int{eos}}})
	require.NoError(t, err)
	require.Len(t, hyps[0], 3)
	for _, h := range hyps[0] {
		require.True(t, h.EOS && h.Finished, "every hypothesis ends with the forced eos: %+v", h)
		require.Len(t, h.Tokens, 3)
		require.InDelta(t, pathLogProb(table, 0, h.Tokens), h.LogProb, 1e-12, "the forced eos adds log-probability 0")
		require.InDelta(t, h.LogProb/4, h.Score, 1e-12, "HF's penalty counts the eos: |y| = 4")
	}
}

// TestSuppressRenormalises: a suppressed token is never chosen and the
// others' log-probabilities are renormalised without it (Marian's pad ban
// before the log-softmax); BadWords bans after it, without renormalising,
// unless Renormalize.
func TestSuppressRenormalises(t *testing.T) {
	table := logProbs(
		[]float64{0.1, 0.2, 0.3, 0.4},
		[]float64{0.25, 0.25, 0.25, 0.25},
		[]float64{0.1, 0.6, 0.2, 0.1},
		[]float64{0.1, 0.5, 0.3, 0.1},
	)
	cfg := BeamConfig{Beam: 1, MaxNewTokens: 1, EOS: []int{1}}
	plain, err := BeamSearch(&markov{table: table}, [][]int{{0}}, cfg)
	require.NoError(t, err)
	require.Equal(t, []int{3}, plain[0][0].Tokens)
	require.InDelta(t, math.Log(0.4), plain[0][0].LogProb, 1e-12)

	cfg.Constraints = Constraints{Suppress: []int{3}}
	sup, err := BeamSearch(&markov{table: table}, [][]int{{0}}, cfg)
	require.NoError(t, err)
	require.Equal(t, []int{2}, sup[0][0].Tokens)
	require.InDelta(t, math.Log(0.3/0.6), sup[0][0].LogProb, 1e-12, "renormalised without token 3")

	cfg.Constraints = Constraints{BadWords: [][]int{{3}}}
	bad, err := BeamSearch(&markov{table: table}, [][]int{{0}}, cfg)
	require.NoError(t, err)
	require.Equal(t, []int{2}, bad[0][0].Tokens)
	require.InDelta(t, math.Log(0.3), bad[0][0].LogProb, 1e-12, "bad words are not renormalised")

	cfg.Constraints.Renormalize = true
	re, err := BeamSearch(&markov{table: table}, [][]int{{0}}, cfg)
	require.NoError(t, err)
	require.InDelta(t, math.Log(0.3/0.6), re[0][0].LogProb, 1e-12, "renormalize_logits")

	g, err := Sample(&markov{table: table}, [][]int{{0}}, SampleConfig{MaxNewTokens: 1, TopP: 1, Constraints: Constraints{Suppress: []int{3}}})
	require.NoError(t, err)
	require.Equal(t, []int{2}, g[0])
}

// TestBadWordsAndNoRepeat: a bad word of two tokens bans its last token
// only after its first; no_repeat_ngram_size 2 bans repeating a bigram of
// the row, prompt included.
func TestBadWordsAndNoRepeat(t *testing.T) {
	// Token 2 always wants 3, and 3 always wants 2: greedy cycles 2 3 2 3.
	table := logProbs(
		[]float64{0.1, 0.1, 0.7, 0.1},
		[]float64{0.25, 0.25, 0.25, 0.25},
		[]float64{0.1, 0.2, 0.1, 0.6},
		[]float64{0.1, 0.2, 0.6, 0.1},
	)
	run := func(c Constraints) []int {
		out, err := Sample(&markov{table: table}, [][]int{{0}}, SampleConfig{MaxNewTokens: 4, TopP: 1, Constraints: c})
		require.NoError(t, err)
		return out[0]
	}
	require.Equal(t, []int{2, 3, 2, 3}, run(Constraints{}))
	// After 2, 3 is banned and 1 wins; after 1 (uniform) the first id, 0.
	require.Equal(t, []int{2, 1, 0, 2}, run(Constraints{BadWords: [][]int{{2, 3}}}), "3 is banned after 2 only")
	// 0 2 3 2, then 3 would repeat the bigram 2 3: 1 instead.
	require.Equal(t, []int{2, 3, 2, 1}, run(Constraints{NoRepeatNGramSize: 2}))
	beam, err := BeamSearch(&markov{table: table}, [][]int{{0}}, BeamConfig{Beam: 1, MaxNewTokens: 4, Constraints: Constraints{NoRepeatNGramSize: 2}})
	require.NoError(t, err)
	require.Equal(t, []int{2, 3, 2, 1}, beam[0][0].Tokens)
}

// TestLengthPenaltyStyles: GNMT's and Hugging Face's penalties, and a case
// where the same α ranks two hypotheses differently.
func TestLengthPenaltyStyles(t *testing.T) {
	require.InDelta(t, math.Pow(8.0/6, 0.6), GNMTPenalty.Penalty(3, 0.6), 1e-15)
	require.InDelta(t, math.Pow(3, 0.6), HFPenalty.Penalty(3, 0.6), 1e-15)
	// log P −1 at length 1 against −2.2 at length 3, α = 1: GNMT scores
	// −1/1 and −2.2/1.333 = −1.65, HF −1 and −0.733.
	short, long := -1.0, -2.2
	require.Greater(t, short/GNMTPenalty.Penalty(1, 1), long/GNMTPenalty.Penalty(3, 1))
	require.Less(t, short/HFPenalty.Penalty(1, 1), long/HFPenalty.Penalty(3, 1))
	for _, s := range []string{"gnmt", "hf"} {
		st, err := ParseLengthPenaltyStyle(s)
		require.NoError(t, err)
		require.Equal(t, s, st.String())
	}
	_, err := ParseLengthPenaltyStyle("fairseq")
	require.ErrorContains(t, err, "gnmt")
	// HF's α may be negative; GNMT's may not.
	require.NoError(t, BeamConfig{Beam: 2, MaxNewTokens: 3, LengthPenalty: -1, LengthPenaltyStyle: HFPenalty}.Validate())
	require.Error(t, BeamConfig{Beam: 2, MaxNewTokens: 3, LengthPenalty: -1}.Validate())
}

func TestConstraintErrors(t *testing.T) {
	for _, c := range []struct {
		c    Constraints
		want string
	}{
		{Constraints{Suppress: []int{-1}}, "negative"},
		{Constraints{BadWords: [][]int{{}}}, "empty"},
		{Constraints{ForcedEOS: []int{-2}}, "negative"},
		{Constraints{NoRepeatNGramSize: -1}, "no_repeat_ngram_size"},
		{Constraints{Suppress: []int{5}}, "outside the vocabulary"},
		{Constraints{Suppress: []int{0, 1, 2, 3, 4}}, "ban every token"},
	} {
		_, err := BeamSearch(&markov{table: trap}, [][]int{{0}}, BeamConfig{Beam: 2, MaxNewTokens: 2, Constraints: c.c})
		require.ErrorContains(t, err, c.want, "%+v", c.c)
		_, err = Sample(&markov{table: trap}, [][]int{{0}}, SampleConfig{MaxNewTokens: 2, TopP: 1, Constraints: c.c})
		require.ErrorContains(t, err, c.want, "%+v", c.c)
	}
}

func TestParseGeneration(t *testing.T) {
	parse := func(s string) (Generation, error) {
		var raw map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(s), &raw))
		return ParseGeneration(raw, []int{0})
	}
	g, err := parse(`{"bad_words_ids": [[28], [0], [3, 4]], "forced_eos_token_id": 0, "max_length": 512, "num_beams": 4,
		"length_penalty": 1.2, "early_stopping": "never", "no_repeat_ngram_size": 3, "renormalize_logits": true,
		"repetition_penalty": 1.0, "min_length": 0, "suppress_tokens": [], "do_sample": false,
		"task_specific_params": {"translation_en_to_de": {"num_beams": 4}}}`)
	require.NoError(t, err)
	require.Equal(t, [][]int{{28}, {3, 4}}, g.BadWords, "eos alone is dropped, as NoBadWordsLogitsProcessor does")
	require.Equal(t, []int{0}, g.ForcedEOS)
	require.True(t, g.ForcedEOSSet)
	require.Equal(t, 512, *g.MaxLength)
	require.Equal(t, 4, *g.NumBeams)
	require.Equal(t, 1.2, *g.LengthPenalty)
	require.Equal(t, StopNever, *g.EarlyStopping)
	require.Equal(t, 3, g.NoRepeatNGramSize)
	require.True(t, g.Renormalize)
	require.False(t, *g.DoSample)
	require.Len(t, g.Notes, 1)
	require.Contains(t, g.Notes[0], "task_specific_params")

	require.Equal(t, 1.0, g.RepetitionPenalty)
	require.False(t, g.Penalizes())
	g, err = parse(`{"repetition_penalty": 1.3}`)
	require.NoError(t, err)
	require.Equal(t, 1.3, g.RepetitionPenalty)
	require.True(t, g.Penalizes())

	g, err = parse(`{"forced_eos_token_id": null, "early_stopping": true}`)
	require.NoError(t, err)
	require.True(t, g.ForcedEOSSet)
	require.Nil(t, g.ForcedEOS)
	require.Equal(t, StopAtBeam, *g.EarlyStopping)

	for _, c := range []struct{ json, want string }{
		{`{"encoder_repetition_penalty": 1.3}`, "encoder_repetition_penalty 1.3 is not supported"},
		{`{"repetition_penalty": 0}`, "repetition_penalty 0: want a number > 0"},
		{`{"repetition_penalty": -1.2}`, "repetition_penalty -1.2"},
		{`{"repetition_penalty": "high"}`, "repetition_penalty"},
		{`{"min_length": 5}`, "min_length 5 is not supported"},
		{`{"suppress_tokens": [1, 2]}`, "suppress_tokens"},
		{`{"num_beams": 0}`, "num_beams 0"},
		{`{"max_length": "long"}`, "max_length"},
		{`{"early_stopping": "sometimes"}`, "early_stopping"},
		{`{"bad_words_ids": [1, 2]}`, "bad_words_ids"},
		{`{"bad_words_ids": [[]]}`, "empty"},
		{`{"length_penalty": "x"}`, "length_penalty"},
	} {
		_, err := parse(c.json)
		require.ErrorContains(t, err, c.want, c.json)
	}
}

func TestReadGenerationPrefersGenerationConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := map[string]json.RawMessage{"num_beams": json.RawMessage("4")}
	g, err := ReadGeneration(dir, cfg, nil)
	require.NoError(t, err)
	require.Equal(t, "config.json", g.From)
	require.Equal(t, 4, *g.NumBeams)
	require.NoError(t, writeFile(dir+"/"+GenerationFile, `{"num_beams": 6, "repetition_penalty": 1.0}`))
	g, err = ReadGeneration(dir, cfg, nil)
	require.NoError(t, err)
	require.Equal(t, GenerationFile, g.From)
	require.Equal(t, 6, *g.NumBeams)
	require.NoError(t, writeFile(dir+"/"+GenerationFile, `{"encoder_repetition_penalty": 2}`))
	_, err = ReadGeneration(dir, cfg, nil)
	require.ErrorContains(t, err, GenerationFile)
	require.True(t, strings.Contains(err.Error(), "encoder_repetition_penalty"))
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }

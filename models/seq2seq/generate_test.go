package seq2seq

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
)

// hfGolden is testdata/generate/hf_generate.json, written by
// tools/pytorch/marian_generate.py: Hugging Face's greedy and beam search on
// the opus_shared fixture, with its generation rules.
type hfGolden struct {
	Model   string
	Sources [][]int
	Cases   []struct {
		Name    string
		Mode    string
		Gen     map[string]json.RawMessage
		Results json.RawMessage
	}
}

type hfHyp struct {
	Tokens        []int
	SequenceScore float64 `json:"sequence_score"`
	SumLogprobs   float64 `json:"sum_logprobs"`
	EOS           bool
}

// TestHFGeneration: greedy and beam search on a Marian that transformers'
// save_pretrained wrote give Hugging Face's ids, and beam search its
// sequence scores and log-probabilities within 1e-9 (float64), under
// Hugging Face's rules: pad banned before the log-softmax, bad_words_ids,
// no_repeat_ngram_size, forced_eos_token_id at max_length − 1,
// renormalize_logits, length_penalty |y|^α, early_stopping true, false and
// "never". Without the rules (the zoo's decoding before issue 34: no forced
// eos, pad not banned, GNMT's penalty) the same cases differ.
func TestHFGeneration(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "generate", "hf_generate.json"))
	require.NoError(t, err)
	var golden hfGolden
	require.NoError(t, json.Unmarshal(b, &golden))
	m, _, err := Load(filepath.Join("..", "..", golden.Model), layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	eos := []int{m.Config.EOSTokenID}
	differs := 0
	for _, c := range golden.Cases {
		t.Run(c.Name, func(t *testing.T) {
			g, err := decode.ParseGeneration(c.Gen, eos)
			require.NoError(t, err)
			dc := DecodeConfig{Generation: &g, LengthPenaltyStyle: decode.HFPenalty, Beam: 1}
			if c.Mode == "greedy" {
				var want []struct {
					Tokens []int
					EOS    bool
				}
				require.NoError(t, json.Unmarshal(c.Results, &want))
				got, err := m.Greedy(golden.Sources, dc)
				require.NoError(t, err)
				for i, w := range want {
					require.Equal(t, w.Tokens, nilIfEmpty(got[i]), "source %d", i)
				}
				raw, err := m.Greedy(golden.Sources, DecodeConfig{raw: true, MaxLen: *g.MaxLength - 1})
				require.NoError(t, err)
				if !equalLists(raw, got) {
					differs++
				}
				return
			}
			var want [][]hfHyp
			require.NoError(t, json.Unmarshal(c.Results, &want))
			dc.Beam, dc.NBest, dc.LengthPenalty, dc.EarlyStopping = *g.NumBeams, *g.NumReturnSequences, *g.LengthPenalty, *g.EarlyStopping
			got, err := m.BeamSearch(golden.Sources, dc)
			require.NoError(t, err)
			for i, w := range want {
				require.Len(t, got[i], len(w), "source %d", i)
				for j, h := range w {
					o := got[i][j]
					require.Equal(t, h.Tokens, nilIfEmpty(o.Tokens), "source %d hypothesis %d", i, j)
					require.Equal(t, h.EOS, o.EOS, "source %d hypothesis %d ends with eos", i, j)
					require.InDelta(t, h.SumLogprobs, o.LogProb, 1e-9, "source %d hypothesis %d log P", i, j)
					require.InDelta(t, h.SequenceScore, o.Score, 1e-9, "source %d hypothesis %d score", i, j)
				}
			}
			// The zoo's decoding before: no rules, GNMT's penalty.
			old := DecodeConfig{raw: true, Beam: dc.Beam, NBest: dc.NBest, LengthPenalty: max(dc.LengthPenalty, 0), EarlyStopping: dc.EarlyStopping, MaxLen: *g.MaxLength - 1}
			before, err := m.BeamSearch(golden.Sources, old)
			require.NoError(t, err)
			for i := range before {
				for j := range before[i] {
					if j >= len(got[i]) || !equalLists([][]int{before[i][j].Tokens}, [][]int{got[i][j].Tokens}) || before[i][j].Score != got[i][j].Score {
						differs++
					}
				}
			}
		})
	}
	require.Positive(t, differs, "the rules should change some outputs, or the golden shows nothing")
}

func nilIfEmpty(x []int) []int {
	if len(x) == 0 {
		return []int{}
	}
	return x
}

func equalLists(a, b [][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// TestMaxLenBounded: a max length past the decoder's positions is an error
// that names max_position_embeddings, before anything is allocated (a
// length of 2^40 once sized the KV cache by it); 0 takes the checkpoint's
// max_length less the decoder start token, capped at the positions.
func TestMaxLenBounded(t *testing.T) {
	m := randomModel(t, 3, false)
	srcs := sources(1, 3)
	for _, n := range []int{m.Config.MaxLen + 1, 1 << 40} {
		_, err := m.Greedy(srcs, DecodeConfig{MaxLen: n})
		require.ErrorContains(t, err, "max_position_embeddings")
		_, err = m.BeamSearch(srcs, DecodeConfig{Beam: 2, MaxLen: n})
		require.ErrorContains(t, err, "max_position_embeddings")
		_, err = Ensemble{m, m}.BeamSearch(srcs, DecodeConfig{Beam: 2, MaxLen: n})
		require.ErrorContains(t, err, "max_position_embeddings")
	}
	limit := func(gen string) (int, error) {
		var raw map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(gen), &raw))
		g, err := decode.ParseGeneration(raw, []int{m.Config.EOSTokenID})
		require.NoError(t, err)
		n, _, err := m.plan(DecodeConfig{Generation: &g}, m.Config.MaxLen)
		return n, err
	}
	for _, c := range []struct {
		gen  string
		want int
	}{
		{`{}`, m.Config.MaxLen}, {`{"max_length": 5}`, 4}, {`{"max_length": 512}`, m.Config.MaxLen},
		{`{"max_length": 9, "max_new_tokens": 3}`, 3},
	} {
		n, err := limit(c.gen)
		require.NoError(t, err)
		require.Equal(t, c.want, n, c.gen)
	}
	_, err := limit(`{"max_length": 1}`)
	require.ErrorContains(t, err, "max_length 1")
}

// TestConfigGeneration: an OPUS-MT config.json's generation fields are
// read (bad_words_ids, forced_eos_token_id, max_length, num_beams), a
// zoo-made config forces its eos, generation_config.json wins over
// config.json, and do_sample true is refused by name.
func TestConfigGeneration(t *testing.T) {
	m, _, err := Load(filepath.Join("testdata", "marian", "opus_shared"))
	require.NoError(t, err)
	g, err := m.Config.Generation()
	require.NoError(t, err)
	require.Equal(t, [][]int{{28}}, g.BadWords)
	require.Equal(t, []int{0}, g.ForcedEOS)
	require.Equal(t, 512, *g.MaxLength)
	require.Equal(t, 4, *g.NumBeams)
	require.Contains(t, g.Notes[0], "task_specific_params")

	g, err = Tiny().Generation()
	require.NoError(t, err)
	require.Equal(t, []int{Tiny().EOSTokenID}, g.ForcedEOS, "the zoo writes forced_eos_token_id = eos_token_id")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, decode.GenerationFile), []byte(`{"num_beams": 2, "max_length": 6}`), 0o644))
	g, err = ReadGeneration(dir, m.Config)
	require.NoError(t, err)
	require.Equal(t, 2, *g.NumBeams)
	require.Nil(t, g.ForcedEOS, "generation_config.json alone: no forced eos unless it says so")
	require.NoError(t, os.WriteFile(filepath.Join(dir, decode.GenerationFile), []byte(`{"do_sample": true}`), 0o644))
	_, err = ReadGeneration(dir, m.Config)
	require.ErrorContains(t, err, "do_sample true is not supported")
}

package seq2seq

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// readJSON reads a JSON object file into a map of values.
func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(b, &v))
	return v
}

// padLover is randomModel with a final_logits_bias that makes pad the most
// likely token at most steps: a decoder that does not ban pad emits it.
func padLover(t *testing.T) *Model {
	m := randomModel(t, 7, false)
	m.FinalLogitsBias.Value.Data().([]float64)[m.Config.PadTokenID] = 6
	return m
}

// TestSaveWritesGenerationConfig: Save writes generation_config.json as
// save_pretrained writes it for the config.json it writes (the ids, and
// the generation fields config.json carries, as OPUS-MT's file has them),
// with the pad ban of the zoo's decoding in Hugging Face's words
// (bad_words_ids [[pad]], renormalize_logits true) and max_length the
// zoo's longest output; config.json stays save_pretrained's, without
// bad_words_ids.
func TestSaveWritesGenerationConfig(t *testing.T) {
	opus, _, err := Load(filepath.Join("testdata", "marian", "opus_shared"))
	require.NoError(t, err)
	require.Nil(t, opus.Config.GenerationConfig, "the fixture has no generation_config.json")
	fresh, err := New(Tiny())
	require.NoError(t, err)
	extra := Tiny()
	extra.Extra = map[string]json.RawMessage{"num_beams": json.RawMessage("5"), "max_new_tokens": json.RawMessage("7"),
		"use_cache": json.RawMessage("true"), "bad_words_ids": json.RawMessage("[[4, 5]]"), "renormalize_logits": json.RawMessage("false"),
		"forced_eos_token_id": json.RawMessage("null"), "transformers_version": json.RawMessage(`"4.44.2"`)}
	withExtra, err := New(extra)
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		m    *Model
		want string
	}{
		{"fresh", fresh, `{"bad_words_ids": [[0]], "bos_token_id": 1, "decoder_start_token_id": 1, "eos_token_id": 2,
			"forced_eos_token_id": 2, "max_length": 17, "pad_token_id": 0, "renormalize_logits": true}`},
		// The shape of OPUS-MT's own generation_config.json.
		{"opus", opus, `{"bad_words_ids": [[28]], "bos_token_id": 0, "decoder_start_token_id": 28, "eos_token_id": 0,
			"forced_eos_token_id": 0, "max_length": 512, "num_beams": 4, "pad_token_id": 28, "renormalize_logits": true,
			"transformers_version": "4.44.2"}`},
		// config.json's own generation fields win; defaults (use_cache
		// true, renormalize_logits false) and null are left out, as
		// save_pretrained leaves them; pad joins bad_words_ids.
		{"extra", withExtra, `{"bad_words_ids": [[4, 5], [0]], "bos_token_id": 1, "decoder_start_token_id": 1, "eos_token_id": 2,
			"max_new_tokens": 7, "num_beams": 5, "pad_token_id": 0, "transformers_version": "4.44.2"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ckpt")
			require.NoError(t, c.m.Save(dir))
			var want map[string]any
			require.NoError(t, json.Unmarshal([]byte(c.want), &want))
			require.Equal(t, want, readJSON(t, filepath.Join(dir, decode.GenerationFile)))
			cfg := readJSON(t, filepath.Join(dir, models.ConfigFile))
			if _, ok := c.m.Config.Extra["bad_words_ids"]; !ok {
				require.NotContains(t, cfg, "bad_words_ids", "config.json stays save_pretrained's")
			}
			b, err := os.ReadFile(filepath.Join(dir, decode.GenerationFile))
			require.NoError(t, err)
			require.Equal(t, byte('{'), b[0])
			require.Equal(t, byte('\n'), b[len(b)-1], "indented, with a final newline, as transformers writes it")

			// Read back, the file is the derived one: the config does not
			// keep it, and decoding follows it.
			back, _, err := Load(dir)
			require.NoError(t, err)
			require.Nil(t, back.Config.GenerationConfig)
			g, err := ReadGeneration(dir, back.Config)
			require.NoError(t, err)
			require.Equal(t, decode.GenerationFile, g.From)
			require.Contains(t, g.BadWords, []int{c.m.Config.PadTokenID})
		})
	}
}

// TestGenerationConfigKept: a checkpoint loaded from a directory whose
// generation_config.json is not the derived one (an OPUS-MT model's, one
// edited by hand) keeps it byte for byte through Save, Load, init_from's
// config edit and zoo average; and decoding follows it, config.json's
// generation fields aside, as transformers does. A generation_config.json
// that is not a JSON object is refused by name.
func TestGenerationConfigKept(t *testing.T) {
	src := filepath.Join(t.TempDir(), "opus")
	opus, _, err := Load(filepath.Join("testdata", "marian", "opus_shared"), layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	require.NoError(t, opus.Save(src))
	custom := []byte("{\n    \"num_beams\": 2,\"max_length\": 5,\n  \"bad_words_ids\": [[28], [3, 4]], \"zoo_note\": \"kept\"}")
	require.NoError(t, os.WriteFile(filepath.Join(src, decode.GenerationFile), custom, 0o644))

	m, _, err := Load(src, layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	require.Equal(t, custom, []byte(m.Config.GenerationConfig))
	g, err := m.Config.Generation()
	require.NoError(t, err)
	require.Equal(t, decode.GenerationFile, g.From)
	require.Equal(t, 2, *g.NumBeams)
	require.Nil(t, g.ForcedEOS, "the file has no forced_eos_token_id; config.json's is not read")
	// config.json's generation fields that the file overrides are named.
	notes := strings.Join(g.Notes, "\n")
	require.Contains(t, notes, "config.json's num_beams 4 is not read: generation_config.json is (2 there)")
	require.Contains(t, notes, "config.json's max_length 512 is not read")
	gd, err := ReadGeneration(src, m.Config)
	require.NoError(t, err)
	require.Equal(t, g.Notes, gd.Notes)

	// Decoding follows it: max_length 5 is at most 4 tokens, eos included.
	srcs := [][]int{{3, 4, 5, 6, 7, 8}, {9, 10}}
	out, err := m.Greedy(srcs, DecodeConfig{})
	require.NoError(t, err)
	for _, o := range out {
		require.LessOrEqual(t, len(o), 4)
	}

	// Save, Load and Save again: the same bytes.
	dst := filepath.Join(t.TempDir(), "saved")
	require.NoError(t, m.Save(dst))
	b, err := os.ReadFile(filepath.Join(dst, decode.GenerationFile))
	require.NoError(t, err)
	require.Equal(t, custom, b)
	back, _, err := Load(dst, layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	require.Equal(t, custom, []byte(back.Config.GenerationConfig))
	again, err := back.Greedy(srcs, DecodeConfig{})
	require.NoError(t, err)
	require.Equal(t, out, again)

	// init_from: a config edit (dropout, as pretrain's init_from makes
	// it) keeps it; pretrain's TestSeq2SeqModelOverride checks that its edit
	// keeps the checkpoint's generation config.
	edited, _, err := LoadEdited(dst, func(c Config) (Config, error) {
		c.Dropout = 0.3
		return c, nil
	})
	require.NoError(t, err)
	require.Equal(t, custom, []byte(edited.Config.GenerationConfig))
	require.Equal(t, 0.3, edited.Config.Dropout)

	// zoo average copies it.
	avg := filepath.Join(t.TempDir(), "avg")
	require.NoError(t, models.Average(avg, []string{dst, dst}))
	b, err = os.ReadFile(filepath.Join(avg, decode.GenerationFile))
	require.NoError(t, err)
	require.Equal(t, custom, b)

	for _, bad := range []string{"null", "[1]", "{"} {
		require.NoError(t, os.WriteFile(filepath.Join(src, decode.GenerationFile), []byte(bad), 0o644))
		_, _, err := Load(src)
		require.ErrorContains(t, err, decode.GenerationFile, bad)
	}
}

// TestGenerationRoundTrip: a model decodes bit for bit the same (ids,
// log-probabilities and scores, greedy and beam search, alone and in an
// ensemble) before Save and after Load, whether the settings come from the
// model (DecodeConfig.Generation nil) or from the directory as zoo
// translate reads them (ReadGeneration); and a model that favours pad never
// emits it, before or after.
func TestGenerationRoundTrip(t *testing.T) {
	m := padLover(t)
	srcs := sources(5, 4, 7, 2, 9)
	type result struct {
		greedy [][]int
		beam   [][]Hypothesis
		ens    [][]Hypothesis
	}
	decodeAll := func(m *Model, g *decode.Generation) result {
		var r result
		var err error
		r.greedy, err = m.Greedy(srcs, DecodeConfig{Generation: g})
		require.NoError(t, err)
		dc := DecodeConfig{Beam: 4, NBest: 4, LengthPenalty: 0.6, Generation: g}
		r.beam, err = m.BeamSearch(srcs, dc)
		require.NoError(t, err)
		r.ens, err = Ensemble{m, m}.BeamSearch(srcs, dc)
		require.NoError(t, err)
		for _, o := range r.greedy {
			require.NotContains(t, o, m.Config.PadTokenID)
		}
		for _, hs := range slices.Concat(r.beam, r.ens) {
			for _, h := range hs {
				require.NotContains(t, h.Tokens, m.Config.PadTokenID)
			}
		}
		return r
	}
	before := decodeAll(m, nil)
	raw, err := m.Greedy(srcs, DecodeConfig{raw: true})
	require.NoError(t, err)
	require.Contains(t, slices.Concat(raw...), m.Config.PadTokenID, "without the ban the model emits pad")

	dir := filepath.Join(t.TempDir(), "ckpt")
	require.NoError(t, m.Save(dir))
	back, _, err := Load(dir, layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	require.Equal(t, m.Config, back.Config)
	g, err := ReadGeneration(dir, back.Config)
	require.NoError(t, err)
	require.Equal(t, decode.GenerationFile, g.From)
	require.True(t, g.Renormalize)
	require.Equal(t, before, decodeAll(back, nil))
	require.Equal(t, before, decodeAll(back, &g))

	// The file as Load keeps it (a copy that is not byte for byte the
	// derived one) decodes the same too.
	back.Config.GenerationConfig, err = m.Config.GenerationConfigJSON()
	require.NoError(t, err)
	back.Config.GenerationConfig = append(back.Config.GenerationConfig, ' ')
	require.Equal(t, before, decodeAll(back, nil))
}

// TestGenerationConfigForHF writes a model that favours pad, saved with
// Save, and the zoo's greedy and beam-search outputs for it (under the
// rules of its generation_config.json) into zoo_decode.json beside it:
// tools/pytorch/marian_generate.py --check DIR decodes the checkpoint with
// Hugging Face's rules as the current transformers applies them (pad banned
// only through generation_config.json's bad_words_ids) and compares. With
// ZOO_MARIAN_SAVE_DIR set it is written to $ZOO_MARIAN_SAVE_DIR/zoo_generate.
func TestGenerationConfigForHF(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "zoo_generate")
	if root := os.Getenv("ZOO_MARIAN_SAVE_DIR"); root != "" {
		dir = filepath.Join(root, "zoo_generate")
	}
	m := padLover(t)
	require.NoError(t, m.Save(dir))
	back, _, err := Load(dir, layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	g, err := ReadGeneration(dir, back.Config)
	require.NoError(t, err)
	srcs := sources(11, 3, 6, 2, 8, 5)
	type hyp struct {
		Tokens        []int   `json:"tokens"`
		SequenceScore float64 `json:"sequence_score"`
		SumLogprobs   float64 `json:"sum_logprobs"`
		EOS           bool    `json:"eos"`
	}
	type decodeCase struct {
		Name    string         `json:"name"`
		Mode    string         `json:"mode"`
		Kwargs  map[string]any `json:"kwargs"`
		Results any            `json:"results"`
	}
	greedy, err := back.Greedy(srcs, DecodeConfig{Generation: &g})
	require.NoError(t, err)
	cases := []decodeCase{{Name: "greedy", Mode: "greedy", Kwargs: map[string]any{}, Results: greedy}}
	for _, beam := range []struct {
		name string
		k    int
		lp   float64
		stop decode.Stopping
	}{{"beam4_lp1_true", 4, 1, decode.StopAtBeam}, {"beam3_lp06_never", 3, 0.6, decode.StopNever}} {
		hs, err := back.BeamSearch(srcs, DecodeConfig{Beam: beam.k, NBest: beam.k, LengthPenalty: beam.lp,
			LengthPenaltyStyle: decode.HFPenalty, EarlyStopping: beam.stop, Generation: &g})
		require.NoError(t, err)
		var res [][]hyp
		for _, list := range hs {
			var r []hyp
			for _, h := range list {
				require.NotContains(t, h.Tokens, m.Config.PadTokenID)
				r = append(r, hyp{Tokens: nilIfEmpty(h.Tokens), SequenceScore: h.Score, SumLogprobs: h.LogProb, EOS: h.EOS})
			}
			res = append(res, r)
		}
		var stop any = beam.stop == decode.StopAtBeam
		if beam.stop == decode.StopNever {
			stop = "never"
		}
		cases = append(cases, decodeCase{Name: beam.name, Mode: "beam", Results: res,
			Kwargs: map[string]any{"num_beams": beam.k, "num_return_sequences": beam.k, "length_penalty": beam.lp, "early_stopping": stop}})
	}
	b, err := json.MarshalIndent(map[string]any{"generator": "models/seq2seq TestGenerationConfigForHF", "sources": srcs, "cases": cases}, "", " ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "zoo_decode.json"), append(b, '\n'), 0o644))
}

// repetition_penalty from a Marian checkpoint's generation settings
// reaches its decoders' rules, and keeps renormalize_logits, which then
// renormalizes the penalized log-softmax as Hugging Face's beam search
// does.
func TestRulesKeepRepetitionPenalty(t *testing.T) {
	c := Config{PadTokenID: 7}
	r := c.rules(decode.Generation{Constraints: decode.Constraints{RepetitionPenalty: 1.3, Renormalize: true}})
	require.Equal(t, 1.3, r.RepetitionPenalty)
	require.True(t, r.Renormalize)
	require.Equal(t, []int{7}, r.Suppress)
	r = c.rules(decode.Generation{Constraints: decode.Constraints{Renormalize: true}})
	require.False(t, r.Renormalize, "nothing left to renormalize for")
}

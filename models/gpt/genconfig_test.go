package gpt

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
)

// requireHFReadable checks that b reads as transformers' GenerationConfig
// reads a generation_config.json: a JSON object whose keys are all
// GenerationConfig attributes (decode.GenerationDefaults) or
// transformers_version, written as transformers writes it (indented by two
// spaces, a final newline); and returns its keys.
func requireHFReadable(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(b, &v), "valid JSON")
	require.NotNil(t, v, "an object")
	for k := range v {
		_, known := decode.GenerationDefaults[k]
		require.True(t, known || k == "transformers_version", "%s is not a GenerationConfig attribute", k)
	}
	var ind bytes.Buffer
	require.NoError(t, json.Indent(&ind, b, "", "  "))
	require.Equal(t, ind.String(), string(b), "indented as transformers writes it")
	require.True(t, bytes.HasSuffix(b, []byte("}\n")))
	return v
}

// TestSaveWritesGenerationConfig: Save writes a language model's
// generation_config.json as GPT2LMHeadModel.save_pretrained writes it for
// the config.json it writes (GenerationConfig.from_model_config): the
// token ids and the generation fields config.json carries, less
// GenerationConfig's defaults and the keys it does not know; a
// classifier, which cannot generate in transformers, gets none.
func TestSaveWritesGenerationConfig(t *testing.T) {
	withExtra := Micro()
	pad := 3
	withExtra.PadTokenID = &pad
	withExtra.Extra = map[string]json.RawMessage{"num_beams": json.RawMessage("4"), "use_cache": json.RawMessage("true"),
		"max_length": json.RawMessage("20"), "no_repeat_ngram_size": json.RawMessage("2"), "renormalize_logits": json.RawMessage("false"),
		"do_sample": json.RawMessage("false"), "length_penalty": json.RawMessage("1.0"),
		"task_specific_params": json.RawMessage(`{"text-generation": {"do_sample": true, "max_length": 50}}`),
		"n_ctx":                json.RawMessage("32"), "transformers_version": json.RawMessage(`"4.46.0"`)}
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"fresh", Micro(), `{"bos_token_id": 95, "eos_token_id": 95}`},
		{"nano", Nano(), `{"bos_token_id": 0, "eos_token_id": 0}`},
		// config.json's own generation fields are kept; defaults
		// (use_cache true, renormalize_logits false) and what
		// GenerationConfig does not know (task_specific_params, n_ctx) are
		// left out, but not a setting the zoo reads (max_length 20,
		// do_sample false, length_penalty 1: decode.SettingKeys).
		{"extra", withExtra, `{"bos_token_id": 95, "eos_token_id": 95, "no_repeat_ngram_size": 2, "num_beams": 4,
			"max_length": 20, "do_sample": false, "length_penalty": 1.0, "pad_token_id": 3, "transformers_version": "4.46.0"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := New(c.cfg, layers.WithSeed(1))
			require.NoError(t, err)
			dir := filepath.Join(t.TempDir(), "ckpt")
			require.NoError(t, m.Save(dir))
			b, err := os.ReadFile(filepath.Join(dir, decode.GenerationFile))
			require.NoError(t, err)
			var want map[string]any
			require.NoError(t, json.Unmarshal([]byte(c.want), &want))
			require.Equal(t, want, requireHFReadable(t, b))
			derived, err := c.cfg.GenerationConfigJSON()
			require.NoError(t, err)
			require.Equal(t, string(derived), string(b))

			// Read back: the derived file is not kept (Save derives it
			// again), and the settings equal config.json's.
			back, _, err := Load(dir)
			require.NoError(t, err)
			require.Nil(t, back.Config.GenerationConfig)
			fromFile, err := ReadGeneration(dir, back.Config)
			require.NoError(t, err)
			fromConfig, err := c.cfg.Generation()
			require.NoError(t, err)
			require.Equal(t, decode.GenerationFile, fromFile.From)
			// config.json's task_specific_params is noted only when
			// config.json is read: it is not a generation setting.
			fromFile.From, fromFile.Notes, fromConfig.Notes = fromConfig.From, nil, nil
			require.Equal(t, fromConfig, fromFile, "generation defaults read back equal")
		})
	}

	cls, err := New(Micro(), layers.WithSeed(1))
	require.NoError(t, err)
	c, err := NewClassifier(cls, []string{"a", "b"})
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "cls")
	require.NoError(t, c.Save(dir))
	_, err = os.Stat(filepath.Join(dir, decode.GenerationFile))
	require.ErrorIs(t, err, os.ErrNotExist, "a classifier has no generation_config.json")
}

// hfGenerationConfig is a generation_config.json as transformers writes
// it for openai-community/gpt2, with a setting edited in: not the one
// Save derives.
const hfGenerationConfig = `{
  "_from_model_config": true,
  "bos_token_id": 95,
  "eos_token_id": 95,
  "bad_words_ids": [
    [
      4
    ]
  ],
  "transformers_version": "4.26.0.dev0"
}
`

// TestGenerationConfigRoundTrip: a checkpoint's own generation_config.json
// survives save → load → save byte for byte, its settings read back
// equal, and Generate follows it (Config.Generation) as transformers'
// generate does, instead of config.json's fields.
func TestGenerationConfigRoundTrip(t *testing.T) {
	m := microModel(t, tensor.Float64)
	m.Config.Extra = map[string]json.RawMessage{"num_beams": json.RawMessage("3")}
	first := filepath.Join(t.TempDir(), "first")
	require.NoError(t, m.Save(first))
	require.NoError(t, os.WriteFile(filepath.Join(first, decode.GenerationFile), []byte(hfGenerationConfig), 0o644))
	want, err := ReadGeneration(first, m.Config)
	require.NoError(t, err)

	dir := first
	for i := range 2 {
		got, _, err := Load(dir)
		require.NoError(t, err)
		require.Equal(t, hfGenerationConfig, string(got.Config.GenerationConfig), "load %d keeps the file", i)
		gen, err := got.Config.Generation()
		require.NoError(t, err)
		require.Equal(t, want, gen, "Config.Generation reads the kept file")
		next := filepath.Join(t.TempDir(), "next")
		require.NoError(t, got.Save(next))
		b, err := os.ReadFile(filepath.Join(next, decode.GenerationFile))
		require.NoError(t, err)
		require.Equal(t, hfGenerationConfig, string(b), "save %d writes it back byte for byte", i)
		back, err := ReadGeneration(next, got.Config)
		require.NoError(t, err)
		require.Equal(t, want, back)
		dir = next
	}
	require.Equal(t, [][]int{{4}}, want.BadWords)
	require.Equal(t, []string{"config.json's num_beams 3 is not read: generation_config.json is (absent there), as transformers' generate reads it; set it there to apply it"}, want.Notes)

	// Generate without settings follows the loaded file's bad_words_ids,
	// as it follows config.json's without one.
	got, _, err := Load(dir, layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	prompt := [][]int{{3, 4, 5}}
	viaFile, err := got.Generate(prompt, Greedy(12))
	require.NoError(t, err)
	plain := microModel(t, tensor.Float64)
	plain.Config.Extra = map[string]json.RawMessage{"bad_words_ids": json.RawMessage("[[4]]")}
	viaConfig, err := plain.Generate(prompt, Greedy(12))
	require.NoError(t, err)
	require.Equal(t, viaConfig, viaFile)
	free, err := microModel(t, tensor.Float64).Generate(prompt, Greedy(12))
	require.NoError(t, err)
	require.Equal(t, 4, free[0][0], "the test needs a model that chooses the banned token")
	require.NotEqual(t, free, viaFile)
}

// TestLoadRefusesBadGenerationConfig: a generation_config.json that is
// not a JSON object, or far larger than a real one, is an error naming
// it, read within a bound.
func TestLoadRefusesBadGenerationConfig(t *testing.T) {
	m := microModel(t, tensor.Float32)
	for _, c := range []struct {
		name, text, want string
	}{
		{"not an object", `[1, 2]`, "not a JSON object"},
		{"null", `null`, "null, not a JSON object"},
		{"huge", `{"a": "` + strings.Repeat("x", decode.MaxGenerationBytes) + `"}`, "larger than 1024 KB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, m.Save(dir))
			require.NoError(t, os.WriteFile(filepath.Join(dir, decode.GenerationFile), []byte(c.text), 0o644))
			_, _, err := Load(dir)
			require.ErrorContains(t, err, c.want)
			require.ErrorContains(t, err, filepath.Join(dir, decode.GenerationFile))
		})
	}
	bad := m.Config
	bad.GenerationConfig = json.RawMessage(`[]`)
	b, err := New(bad)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "none")
	require.ErrorContains(t, b.Save(dir), "not a JSON object")
	_, err = os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing is written")
}

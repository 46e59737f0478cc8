package seq2seq

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// opusConfig is the fixture's config.json, as an OPUS-MT checkpoint
// converted by transformers has it.
func opusConfig(t *testing.T) map[string]any {
	b, err := os.ReadFile(filepath.Join("testdata", "marian", "opus_shared", layers.ConfigFile))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func decodeConfig(t *testing.T, m map[string]any) (Config, error) {
	b, err := json.Marshal(m)
	require.NoError(t, err)
	var c Config
	return c, json.Unmarshal(b, &c)
}

// Every Marian field maps onto the Config it names.
func TestMarianConfigFields(t *testing.T) {
	c, err := decodeConfig(t, opusConfig(t))
	require.NoError(t, err)
	require.Equal(t, Config{
		DModel: 16, NumHeads: 4, DFF: 32, NumEncoderLayers: 2, NumDecoderLayers: 2, MaxLen: 16,
		SrcVocabSize: 29, TgtVocabSize: 29, ShareEmbeddings: true, TieOutput: true, Activation: "swish",
		LayerNormEps: 1e-5, PadTokenID: 28, BOSTokenID: 28, EOSTokenID: 0, ScaleEmbedding: true,
		PositionLayout: layers.SinCosConcat, Extra: c.Extra,
	}, c)
	require.NoError(t, c.Validate(), "decoder_start_token_id = pad_token_id, as Marian has it")
	for _, k := range []string{"_name_or_path", "task_specific_params", "bad_words_ids", "num_beams", "max_length",
		"transformers_version", "torch_dtype", "bos_token_id", "static_position_embeddings", "num_hidden_layers"} {
		require.Contains(t, c.Extra, k)
	}
	// Mapped fields are not extra, nor inert ones that Save writes anyway.
	for _, k := range []string{"d_model", "vocab_size", "model_type", "eos_token_id", "architectures", "forced_eos_token_id", "init_std"} {
		require.NotContains(t, c.Extra, k)
	}

	// MarianConfig's defaults fill what a config leaves out; decoder_vocab_size
	// is vocab_size then.
	c, err = decodeConfig(t, map[string]any{"model_type": "marian", "vocab_size": 100, "decoder_vocab_size": nil, "pad_token_id": 99, "decoder_start_token_id": 99})
	require.NoError(t, err)
	require.Equal(t, 1024, c.DModel)
	require.Equal(t, 16, c.NumHeads)
	require.Equal(t, 4096, c.DFF)
	require.Equal(t, "gelu", c.Activation)
	require.Equal(t, 100, c.TgtVocabSize)
	require.False(t, c.ScaleEmbedding, "scale_embedding defaults to false in MarianConfig")
	require.True(t, c.ShareEmbeddings && c.TieOutput)
	require.Equal(t, layers.SinCosConcat, c.PositionLayout)
	require.Nil(t, c.Extra)

	// Read over a set Config, as a pipeline config's "model" section is read
	// over Small(), a Marian config changes only what it names.
	s := Small()
	require.NoError(t, json.Unmarshal([]byte(`{"model_type": "marian", "d_model": 128, "decoder_attention_heads": 2}`), &s))
	want := Small()
	want.DModel, want.NumHeads = 128, 2
	require.Equal(t, want, s)
}

// Fields that change nothing are kept and written back unchanged; a model
// written from scratch reads back equal.
func TestMarianConfigRoundTrip(t *testing.T) {
	in := opusConfig(t)
	c, err := decodeConfig(t, in)
	require.NoError(t, err)
	b, err := json.Marshal(c)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	require.Equal(t, in, out)

	for _, edit := range []func(*Config){
		func(*Config) {},
		func(c *Config) { c.NormFirst = true },
		func(c *Config) { c.LayerNormEps = 1e-6 },
		func(c *Config) { c.PositionLayout = layers.SinCosInterleaved },
		func(c *Config) {
			c.ShareEmbeddings, c.TieOutput, c.TgtVocabSize, c.ScaleEmbedding = false, false, 13, false
		},
		func(c *Config) { c.ActivationDropout, c.AttentionDropout, c.Activation = 0.1, 0.2, "gelu_new" },
	} {
		c := Tiny()
		edit(&c)
		b, err := json.Marshal(c)
		require.NoError(t, err)
		var back Config
		require.NoError(t, json.Unmarshal(b, &back), "%s", b)
		require.Equal(t, c, back, "%s", b)
	}

	// The zoo's own keys appear only when Marian cannot say what the model does.
	b, err = json.Marshal(Tiny())
	require.NoError(t, err)
	for _, k := range []string{"sinusoidal_layout", "layer_norm_eps", "normalize_before", "add_final_layer_norm", "tie_word_embeddings"} {
		require.NotContains(t, string(b), `"`+k+`"`)
	}
	pre := Tiny()
	pre.NormFirst, pre.PositionLayout = true, layers.SinCosInterleaved
	b, err = json.Marshal(pre)
	require.NoError(t, err)
	require.Contains(t, string(b), `"normalize_before":true`)
	require.Contains(t, string(b), `"add_final_layer_norm":true`)
	require.Contains(t, string(b), `"sinusoidal_layout":"interleaved"`)

	// Aliases of mapped fields are written with the current value.
	c.DModel, c.NumHeads = 32, 8
	b, err = json.Marshal(c)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &out))
	require.Equal(t, 2.0, out["num_hidden_layers"])
	c.NumEncoderLayers = 3
	b, err = json.Marshal(c)
	require.NoError(t, err)
	require.Contains(t, string(b), `"num_hidden_layers":3`)
}

// Each field that would change the computation in a way the zoo does not
// implement is an error naming it.
func TestMarianConfigRefusesWhatItCannotCompute(t *testing.T) {
	for _, c := range []struct {
		set map[string]any
		msg string
	}{
		{map[string]any{"static_position_embeddings": false}, "static_position_embeddings false is not supported: the zoo does not implement learned position embeddings"},
		{map[string]any{"normalize_embedding": true}, "normalize_embedding true is not supported"},
		{map[string]any{"layernorm_embedding": true}, "layernorm_embedding true is not supported"},
		{map[string]any{"add_bias_logits": true}, "add_bias_logits true is not supported"},
		{map[string]any{"encoder_layerdrop": 0.1}, "encoder_layerdrop 0.1 is not supported: the zoo does not implement LayerDrop"},
		{map[string]any{"decoder_layerdrop": 0.2}, "decoder_layerdrop 0.2 is not supported"},
		{map[string]any{"is_decoder": true}, "is_decoder true is not supported"},
		{map[string]any{"tie_encoder_decoder": true}, "tie_encoder_decoder true is not supported"},
		{map[string]any{"pruned_heads": map[string]any{"0": []int{1}}}, "pruned_heads"},
		{map[string]any{"activation_function": "tanh"}, `activation_function: unknown activation "tanh"`},
		{map[string]any{"decoder_attention_heads": 2}, "encoder_attention_heads 4 differs from decoder_attention_heads 2"},
		{map[string]any{"encoder_ffn_dim": 64}, "encoder_ffn_dim 64 differs from decoder_ffn_dim 32"},
		{map[string]any{"decoder_vocab_size": 30}, "decoder_vocab_size 30 differs from vocab_size 29, but share_encoder_decoder_embeddings is true"},
		{map[string]any{"eos_token_id": []int{0, 1}}, "eos_token_id [0 1] is not supported"},
		{map[string]any{"normalize_before": true}, "normalize_before true is not supported without add_final_layer_norm true"},
		{map[string]any{"add_final_layer_norm": true}, "add_final_layer_norm true is not supported without normalize_before true"},
		{map[string]any{"num_hidden_layers": 3}, "num_hidden_layers 3 disagrees with 2"},
		{map[string]any{"d_model": "sixteen"}, "d_model"},
		{map[string]any{"model_type": "gpt2"}, `model_type "gpt2" is another model family; this needs a "marian" (Hugging Face Marian) checkpoint, or the zoo's older "seq2seq"`},
	} {
		m := opusConfig(t)
		for k, v := range c.set {
			m[k] = v
		}
		_, err := decodeConfig(t, m)
		require.ErrorContains(t, err, c.msg, "%v", c.set)
	}

	// Nor does Save write them.
	c := Tiny()
	c.Extra = map[string]json.RawMessage{"static_position_embeddings": json.RawMessage("false")}
	_, err := json.Marshal(c)
	require.ErrorContains(t, err, "static_position_embeddings false is not supported")
	c.Extra = map[string]json.RawMessage{"normalize_before": json.RawMessage("true")}
	_, err = json.Marshal(c)
	require.ErrorContains(t, err, "normalize_before true but NormFirst is false")
	// Nor a key that Config models: Extra would contradict the field.
	c.Extra = map[string]json.RawMessage{"d_model": json.RawMessage("64")}
	_, err = json.Marshal(c)
	require.ErrorContains(t, err, `seq2seq config: Extra has "d_model", which Config models: set the field instead`)

	// Pre-norm in transformers 3's words is the zoo's NormFirst.
	m := opusConfig(t)
	m["normalize_before"], m["add_final_layer_norm"] = true, true
	pre, err := decodeConfig(t, m)
	require.NoError(t, err)
	require.True(t, pre.NormFirst)
	require.NotContains(t, pre.Extra, "normalize_before")
}

// The zoo's older config.json still reads: "seq2seq" checkpoints with the
// scaled embeddings and interleaved positions they were trained with, and
// pipeline configs without model_type over the values they are read into.
func TestLegacyConfig(t *testing.T) {
	var c Config
	require.NoError(t, json.Unmarshal([]byte(`{"model_type": "seq2seq", "d_model": 16, "num_heads": 4, "d_ff": 32,
		"num_encoder_layers": 2, "num_decoder_layers": 2, "dropout": 0.0, "max_len": 16, "src_vocab_size": 23,
		"tgt_vocab_size": 23, "share_embeddings": true, "tie_output": true, "norm_first": false, "activation": "relu",
		"layer_norm_eps": 1e-05, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}`), &c))
	require.Equal(t, Config{
		DModel: 16, NumHeads: 4, DFF: 32, NumEncoderLayers: 2, NumDecoderLayers: 2, MaxLen: 16,
		SrcVocabSize: 23, TgtVocabSize: 23, ShareEmbeddings: true, TieOutput: true, Activation: "relu",
		LayerNormEps: 1e-5, PadTokenID: 0, BOSTokenID: 1, EOSTokenID: 2, ScaleEmbedding: true,
		PositionLayout: layers.SinCosInterleaved,
	}, c)

	s := Small()
	require.NoError(t, json.Unmarshal([]byte(`{"d_model": 64, "num_heads": 2, "max_len": 24}`), &s))
	want := Small()
	want.DModel, want.NumHeads, want.MaxLen = 64, 2, 24
	require.Equal(t, want, s, "a fragment keeps the preset's Marian position layout")

	err := json.Unmarshal([]byte(`{"d_model": 64, "encoder_layers": 2}`), &s)
	require.ErrorContains(t, err, `encoder_layers is Marian's name; a config with Marian's names needs "model_type": "marian"`)
}

// A checkpoint of the zoo before Marian (config.json "seq2seq", no
// final_logits_bias, interleaved positions) loads and computes what it did:
// the parity case's weights under the older config.json give its logits.
func TestLegacyCheckpointLoads(t *testing.T) {
	src := filepath.Join("testdata", "parity", "post_shared")
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(src, layers.WeightsFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, layers.WeightsFile), b, 0o644))
	b, err = os.ReadFile(filepath.Join(src, "case.safetensors"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "case.safetensors"), b, 0o644))
	legacy := `{"model_type": "seq2seq", "d_model": 16, "num_heads": 4, "d_ff": 32, "num_encoder_layers": 2,
		"num_decoder_layers": 2, "dropout": 0.0, "max_len": 16, "src_vocab_size": 23, "tgt_vocab_size": 23,
		"share_embeddings": true, "tie_output": true, "norm_first": false, "activation": "relu",
		"layer_norm_eps": 1e-05, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, layers.ConfigFile), []byte(legacy), 0o644))
	old := parityLogits(t, dir)
	now := parityLogits(t, src)
	require.Equal(t, now, old)
	require.True(t, strings.Contains(readFile(t, filepath.Join(src, layers.ConfigFile)), `"sinusoidal_layout": "interleaved"`),
		"the parity case keeps the paper's layout covered")
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// parityLogits loads a parity case directory in float64 and returns its
// logits for the case's batch, checking them against the case's.
func parityLogits(t *testing.T, dir string) []float64 {
	t.Helper()
	m, _, err := Load(dir, layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	f := readCase(t, dir)
	src, ss := caseInts(t, f, "src")
	tgtIn, ts := caseInts(t, f, "tgt_in")
	g := m.Store.NewGraph()
	feed := m.NewFeed(g, ss[0], ss[1], ts[1])
	require.NoError(t, feed.Load(Batch{Src: src, TgtIn: tgtIn, Labels: make([]int, len(tgtIn)), B: ss[0], Ts: ss[1], Tt: ts[1]}))
	y, err := m.Forward(g, feed.Inputs)
	require.NoError(t, err)
	got := runAll(t, g, []*gorgonia.Node{y})[0]
	want := caseFloats(t, f, "logits")
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i], got[i], 1e-10, "logits[%d]", i)
	}
	return got
}

// Keys match exactly, as transformers reads them: Dropout is not dropout
// but an inert key, kept; and null reads as the key left out.
func TestMarianConfigKeysMatchExactly(t *testing.T) {
	m := opusConfig(t)
	delete(m, "dropout")
	m["Dropout"], m["decoder_layers"] = 0.5, nil
	c, err := decodeConfig(t, m)
	require.NoError(t, err)
	require.Equal(t, 0.1, c.Dropout, "MarianConfig's default")
	require.Equal(t, 12, c.NumDecoderLayers, "MarianConfig's default")
	require.Equal(t, json.RawMessage("0.5"), c.Extra["Dropout"])
	require.NotContains(t, c.Extra, "decoder_layers")
}

package gpt

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
)

// readJSON decodes dir/config.json into a map.
func readJSON(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, layers.ConfigFile))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// A config.json value that makes transformers compute what the zoo does not
// is an error naming the key, from Load and from json.Unmarshal; the
// default values of the same keys load.
func TestConfigRefusesUnsupported(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"add_cross_attention", func(m map[string]any) { m["add_cross_attention"] = true },
			"add_cross_attention true is not supported: zoo's GPT is decoder-only"},
		{"pruned_heads", func(m map[string]any) { m["pruned_heads"] = map[string]any{"0": []int{1}} },
			`pruned_heads {"0":[1]} is not supported`},
		{"problem_type regression", func(m map[string]any) { m["problem_type"] = "regression" },
			`problem_type "regression" is not supported`},
		{"problem_type multi-label", func(m map[string]any) { m["problem_type"] = "multi_label_classification" },
			`problem_type "multi_label_classification" is not supported`},
		{"alias disagrees", func(m map[string]any) { m["hidden_size"] = 64 },
			"n_embd 32 and its alias hidden_size 64 disagree"},
		{"null bool", func(m map[string]any) { m["scale_attn_weights"] = nil }, "scale_attn_weights is null"},
		{"null id", func(m map[string]any) { m["eos_token_id"] = nil }, "eos_token_id is null"},
		{"null width", func(m map[string]any) { m["n_embd"] = nil }, "n_embd is null"},
		{"model_type", func(m map[string]any) { m["model_type"] = "gpt_neo" }, `model_type "gpt_neo" is not one zoo knows; known model types: gpt2 (gpt)`}, // the checkpoint bundle's check
		{"activation", func(m map[string]any) { m["activation_function"] = "tanh" },
			`activation_function: unknown activation "tanh"`},
		{"num_labels", func(m map[string]any) {
			m["id2label"] = map[string]any{"0": "a", "1": "b"}
			m["num_labels"] = 3
		}, "num_labels 3 disagrees with the 2 labels of id2label"},
		{"pad outside", func(m map[string]any) { m["pad_token_id"] = 96 }, "pad_token_id 96 is outside the vocabulary"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := parityWith(t, c.edit)
			_, _, err := Load(dir)
			require.ErrorContains(t, err, c.want)
			require.ErrorContains(t, err, filepath.Join(dir, layers.ConfigFile), "the error says which file")
		})
	}
	for _, ok := range []map[string]any{
		{"add_cross_attention": false}, {"pruned_heads": map[string]any{}}, {"problem_type": nil},
		{"problem_type": "single_label_classification"}, {"hidden_size": 32}, {"n_inner": nil},
		{"pad_token_id": nil},
	} {
		_, _, err := Load(parityWith(t, func(m map[string]any) {
			for k, v := range ok {
				m[k] = v
			}
		}))
		require.NoError(t, err, "%v", ok)
	}
}

// inert are config.json keys of GPT2Config and PretrainedConfig (and two
// that transformers' GPT-2 does not know) that change nothing the zoo
// computes, with values other than their defaults where a value is free.
var inert = map[string]any{
	"_name_or_path": "openai-community/gpt2", "transformers_version": "4.46.0", "_commit_hash": "607a30d",
	"use_cache": false, "torch_dtype": "float16", "dtype": "bfloat16", "n_ctx": 1024,
	"summary_type": "cls_index", "summary_use_proj": true, "summary_activation": nil,
	"summary_proj_to_labels": true, "summary_first_dropout": 0.1,
	"task_specific_params": map[string]any{"text-generation": map[string]any{"do_sample": true, "max_length": 50}},
	"output_hidden_states": true, "output_attentions": false, "return_dict": true, "torchscript": true,
	"use_bfloat16": false, "tf_legacy_loss": false, "chunk_size_feed_forward": 0, "is_encoder_decoder": false,
	"is_decoder": true, "cross_attention_hidden_size": nil, "tie_encoder_decoder": false,
	"finetuning_task": "sst2", "tokenizer_class": "GPT2Tokenizer", "prefix": nil, "sep_token_id": nil,
	"decoder_start_token_id": nil, "max_length": 50, "min_length": 0, "do_sample": true, "early_stopping": false,
	"num_beams": 4, "temperature": 0.7, "top_k": 40, "top_p": 0.9, "repetition_penalty": 1.2,
	"length_penalty": 1.0, "no_repeat_ngram_size": 3, "bad_words_ids": nil, "num_return_sequences": 1,
	"forced_bos_token_id": nil, "forced_eos_token_id": nil, "gradient_checkpointing": false,
	"_attn_implementation_autoset": true, "attn_implementation": "eager",
	"add_cross_attention": false, "pruned_heads": map[string]any{}, "problem_type": nil,
	"layer_norm_eps": 1e-6, "zoo_future_key": map[string]any{"nested": []any{1, 2.5, "x", nil}},
}

// Every key that changes nothing comes back from Load → Save with the value
// it had, and so do the others: the saved config.json is the one read.
func TestConfigInertFieldsRoundTrip(t *testing.T) {
	src := parityWith(t, func(m map[string]any) {
		for k, v := range inert {
			m[k] = v
		}
	})
	m, _, err := Load(src)
	require.NoError(t, err)
	require.Len(t, m.Config.Extra, len(inert)+1, "the inert keys and the parity config's _note")
	dst := t.TempDir()
	require.NoError(t, m.Save(dst))
	require.Equal(t, readJSON(t, src), readJSON(t, dst))

	back, _, err := Load(dst)
	require.NoError(t, err)
	require.Equal(t, m.Config, back.Config)

	// Extra survives a classifier head, which adds id2label and
	// pad_token_id and changes architectures.
	c, err := NewClassifier(m, []string{"neg", "pos"})
	require.NoError(t, err)
	require.NoError(t, c.Save(dst))
	saved := readJSON(t, dst)
	for k, v := range inert {
		require.Equal(t, jsonValue(t, v), saved[k], k)
	}
	require.Equal(t, []any{"GPT2ForSequenceClassification"}, saved["architectures"])
}

func jsonValue(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// An LM whose config.json carries id2label (hub LMs often do) is saved as
// an LM: architectures names the layout written, not what id2label
// suggests.
func TestSaveArchitecturesFollowLayout(t *testing.T) {
	m, _, err := Load(parityWith(t, func(m map[string]any) {
		m["id2label"] = map[string]any{"0": "LABEL_0", "1": "LABEL_1"}
		m["architectures"] = []any{"GPT2Model"}
	}))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, m.Save(dir))
	saved := readJSON(t, dir)
	require.Equal(t, []any{"GPT2LMHeadModel"}, saved["architectures"])
	require.Equal(t, map[string]any{"0": "LABEL_0", "1": "LABEL_1"}, saved["id2label"])
}

// GPT2Config's attribute_map aliases set the fields they stand for, and are
// written under GPT-2's own names.
func TestConfigAliases(t *testing.T) {
	dir := parityWith(t, func(m map[string]any) {
		for _, a := range aliases {
			m[a.Alias] = m[a.Key]
			delete(m, a.Key)
		}
	})
	m, _, err := Load(dir)
	require.NoError(t, err)
	ref, _, err := Load(parityDir)
	require.NoError(t, err)
	require.Equal(t, ref.Config, m.Config)
	out := t.TempDir()
	require.NoError(t, m.Save(out))
	saved := readJSON(t, out)
	for _, a := range aliases {
		require.NotContains(t, saved, a.Alias)
		require.Contains(t, saved, a.Key)
	}
}

// The zoo's old activation name gelu_tanh loads as gelu_new, transformers'
// name for it, and is written as gelu_new, from Save and from MarshalJSON.
func TestConfigGELUTanhIsWrittenGELUNew(t *testing.T) {
	m, _, err := Load(parityWith(t, func(m map[string]any) { m["activation_function"] = "gelu_tanh" }))
	require.NoError(t, err)
	require.Equal(t, "gelu_new", m.Config.ActivationFunction)
	dir := t.TempDir()
	require.NoError(t, m.Save(dir))
	require.Equal(t, "gelu_new", readJSON(t, dir)["activation_function"])

	c := Micro()
	c.ActivationFunction = "gelu_tanh"
	b, err := json.Marshal(c)
	require.NoError(t, err)
	require.Contains(t, string(b), `"activation_function":"gelu_new"`)
	for _, name := range []string{"gelu_pytorch_tanh", "gelu_fast", "gelu_accurate", "gelu_python", "gelu", "relu"} {
		c.ActivationFunction = name
		b, err := json.Marshal(c)
		require.NoError(t, err)
		require.Contains(t, string(b), `"activation_function":"`+name+`"`, "transformers' names are kept")
		var back Config
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, name, back.ActivationFunction)
	}
}

// num_labels without id2label names the labels as transformers does.
func TestConfigNumLabels(t *testing.T) {
	var c Config
	require.NoError(t, json.Unmarshal([]byte(`{"num_labels": 3}`), &c))
	require.Equal(t, map[string]string{"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}, c.ID2Label)
	require.Empty(t, c.Extra, "num_labels is read, not kept")
	c = Config{}
	require.NoError(t, json.Unmarshal([]byte(`{"num_labels": null}`), &c))
	require.Nil(t, c.ID2Label)
}

// Extra may not hold keys Config models, nor refused values: Validate, New
// and Save say so.
func TestConfigExtraChecks(t *testing.T) {
	c := Micro()
	c.Extra = map[string]json.RawMessage{"n_embd": json.RawMessage(`64`)}
	require.ErrorContains(t, c.Validate(), `Extra has "n_embd", which Config models`)
	c.Extra = map[string]json.RawMessage{"hidden_size": json.RawMessage(`64`)}
	require.ErrorContains(t, c.Validate(), `Extra has "hidden_size"`)
	c.Extra = map[string]json.RawMessage{"add_cross_attention": json.RawMessage(`true`)}
	_, err := New(c)
	require.ErrorContains(t, err, "add_cross_attention true is not supported")
	_, err = json.Marshal(c)
	require.ErrorContains(t, err, "add_cross_attention true is not supported")

	m, err := New(Micro())
	require.NoError(t, err)
	m.Config.Extra = map[string]json.RawMessage{"architectures": json.RawMessage(`["GPT2Model"]`)}
	require.ErrorContains(t, m.Save(t.TempDir()), `Extra has "architectures"`)
	m.Config.Extra = map[string]json.RawMessage{"note": json.RawMessage(`{not json`)}
	require.ErrorContains(t, m.Save(t.TempDir()), `Extra["note"] is not valid JSON`)
}

// AttentionScale is transformers' factor: 1/√head_dim, 1 without
// scale_attn_weights, divided by layer+1 with
// scale_attn_by_inverse_layer_idx.
func TestAttentionScaleValues(t *testing.T) {
	c := Micro() // head_dim 8
	require.InDelta(t, 1/math.Sqrt(8), c.AttentionScale(1), 1e-15)
	c.ScaleAttnByInverseLayerIdx = true
	require.InDelta(t, 1/math.Sqrt(8)/2, c.AttentionScale(1), 1e-15)
	c.ScaleAttnWeights = false
	require.Equal(t, 1.0/3, c.AttentionScale(2))
	c.ScaleAttnByInverseLayerIdx = false
	require.Equal(t, 1.0, c.AttentionScale(5))

	m, err := New(c)
	require.NoError(t, err)
	for _, b := range m.H.Layers {
		require.Equal(t, 1.0, b.SelfAttn.Scale)
	}
}

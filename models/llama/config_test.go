package llama

import (
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models"
)

// sumTensors counts the parameters Tensors lists, independently of
// NumParams' formula.
func sumTensors(c Config) int64 {
	var n int64
	for _, t := range c.Tensors() {
		p := int64(1)
		for _, d := range t.Shape {
			p *= int64(d)
		}
		n += p
	}
	return n
}

// The presets have their published parameter counts (the hub's model
// cards and safetensors metadata: embeddings counted once when tied), and
// NumParams agrees with the tensors the checkpoint holds.
func TestPresetParams(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want int64
	}{
		{"TinyLlama-1.1B", TinyLlama(), 1_100_048_384},
		{"SmolLM-135M", SmolLM135M(), 134_515_008},
		{"Qwen2.5-0.5B", Qwen25_0_5B(), 494_032_768},
		{"Tiny", Tiny(), 24_736},
		{"TinyLlama3", TinyLlama3(), 23_712},
		{"TinyQwen2", TinyQwen2(), 21_792},
		{"TinyMistral", TinyMistral(), 24_736},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, c.cfg.Validate())
			require.Equal(t, c.want, c.cfg.NumParams())
			require.Equal(t, c.want, sumTensors(c.cfg))
		})
	}
}

// readTestConfig reads testdata/configs/name.
func readTestConfig(t *testing.T, name string) ([]byte, Config) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "configs", name))
	require.NoError(t, err)
	var c Config
	require.NoError(t, json.Unmarshal(b, &c))
	return b, c
}

// Published config.json files read as the presets (their inert keys kept
// in Extra), give the published parameter counts, and come back from
// MarshalJSON with every key they had, at its value; what is written reads
// back as the same Config.
func TestRealConfigs(t *testing.T) {
	for _, c := range []struct {
		file   string
		preset *Config
		params int64
		extra  []string
		rope   Rope
	}{
		{"tinyllama-1.1b.json", ptrTo(TinyLlama()), 1_100_048_384, []string{"pretraining_tp", "torch_dtype", "transformers_version", "use_cache"},
			Rope{Type: RopeDefault, Theta: 10000}},
		{"smollm-135m.json", ptrTo(SmolLM135M()), 134_515_008, []string{"pretraining_tp", "torch_dtype", "transformers_version", "use_cache"},
			Rope{Type: RopeDefault, Theta: 10000}},
		{"qwen2.5-0.5b.json", ptrTo(Qwen25_0_5B()), 494_032_768, []string{"max_window_layers", "torch_dtype", "transformers_version", "use_cache", "use_mrope"},
			Rope{Type: RopeDefault, Theta: 1e6}},
		// Llama 3.2 1B: 1.24B, llama3 rope scaling.
		{"llama-3.2-1b.json", nil, 1_235_814_400, []string{"pretraining_tp", "torch_dtype", "transformers_version", "use_cache"},
			Rope{Type: RopeLlama3, Theta: 500000, Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}},
		// Mistral 7B v0.1: 7.24B, a 4096-token sliding window.
		{"mistral-7b-v0.1.json", nil, 7_241_732_096, []string{"torch_dtype", "transformers_version", "use_cache"},
			Rope{Type: RopeDefault, Theta: 10000}},
		// Llama 3.1 8B's config.json in transformers 5.x's form
		// (rope_parameters holding rope_theta, dtype): 8.03B, an eos list.
		{"llama-3.1-8b-v5-form.json", nil, 8_030_261_248, []string{"dtype", "pretraining_tp", "transformers_version", "use_cache"},
			Rope{Type: RopeLlama3, Theta: 500000, Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}},
	} {
		t.Run(c.file, func(t *testing.T) {
			b, cfg := readTestConfig(t, c.file)
			require.NoError(t, cfg.Validate())
			require.Equal(t, c.params, cfg.NumParams())
			require.Equal(t, c.extra, slices.Sorted(maps.Keys(cfg.Extra)))
			if c.preset != nil {
				got := cfg
				got.Extra = nil
				require.Equal(t, *c.preset, got)
			}
			r, err := cfg.Rope()
			require.NoError(t, err)
			require.Equal(t, c.rope, r)

			out, err := json.Marshal(cfg)
			require.NoError(t, err)
			var in, written map[string]any
			require.NoError(t, json.Unmarshal(b, &in))
			require.NoError(t, json.Unmarshal(out, &written))
			for k, v := range in {
				require.Equal(t, v, written[k], "key %s", k)
			}
			var back Config
			require.NoError(t, json.Unmarshal(out, &back))
			require.Equal(t, cfg, back)
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// An empty config.json of each model type is transformers' defaults for
// that class, and validates.
func TestDefaults(t *testing.T) {
	for _, mt := range ModelTypes {
		var c Config
		require.NoError(t, json.Unmarshal([]byte(`{"model_type":"`+mt+`"}`), &c))
		d, err := Defaults(mt)
		require.NoError(t, err)
		require.Equal(t, d, c)
		require.NoError(t, c.Validate(), mt)
	}
	llama, _ := Defaults(ModelLlama)
	require.Equal(t, 32, llama.KVHeads(), "num_key_value_heads null is num_attention_heads")
	require.Equal(t, 128, llama.HeadDimension(), "head_dim null is hidden_size/num_attention_heads")
	require.Equal(t, []int{2}, llama.EOS())
	mistral, _ := Defaults(ModelMistral)
	require.Equal(t, 8, mistral.KVHeads())
	require.Equal(t, 4096, mistral.Window())
	qwen, _ := Defaults(ModelQwen2)
	require.Nil(t, qwen.BOSTokenID)
	require.Nil(t, qwen.EOS())
	require.Zero(t, qwen.Window(), "Qwen2's window is off without use_sliding_window")

	// Without model_type a config reads as llama, or as the model type of
	// the config read into.
	var c Config
	require.NoError(t, json.Unmarshal([]byte(`{"hidden_size":64}`), &c))
	require.Equal(t, ModelLlama, c.ModelType)
	m := TinyMistral()
	require.NoError(t, json.Unmarshal([]byte(`{"hidden_size":64}`), &m))
	require.Equal(t, ModelMistral, m.ModelType)
	require.Equal(t, 16, m.SlidingWindow, "keys left out keep the values of the config read into")
	// Another model type starts from its own defaults.
	require.NoError(t, json.Unmarshal([]byte(`{"model_type":"qwen2"}`), &m))
	q, _ := Defaults(ModelQwen2)
	require.Equal(t, q, m)
	_, err := Defaults("gpt2")
	require.ErrorContains(t, err, `model_type "gpt2" is not one of llama, qwen2, mistral`)
}

// edit returns Tiny's config.json as a map with the edits applied (a nil
// value deletes the key).
func edited(t *testing.T, base Config, edits map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(base)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for k, v := range edits {
		if v == "<delete>" {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	b, err = json.Marshal(m)
	require.NoError(t, err)
	return b
}

// read reads a config.json and validates it, as ReadConfig does.
func read(b []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, err
	}
	return c, c.Validate()
}

// Every value zoo does not compute as transformers does is refused, by
// name, when read.
func TestConfigRefuses(t *testing.T) {
	llama3 := map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
	with := func(m map[string]any, k string, v any) map[string]any {
		c := maps.Clone(m)
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	for _, c := range []struct {
		name  string
		base  Config
		edits map[string]any
		want  string
	}{
		{"kv heads do not divide", Tiny(), map[string]any{"num_key_value_heads": 3},
			"llama config: num_attention_heads 4 is not divisible by num_key_value_heads 3"},
		{"more kv heads than heads", Tiny(), map[string]any{"num_key_value_heads": 8}, "num_attention_heads 4 is not divisible by num_key_value_heads 8"},
		{"hidden does not divide without head_dim", Tiny(), map[string]any{"num_attention_heads": 5, "num_key_value_heads": 5},
			"hidden_size 32 is not divisible by num_attention_heads 5, and head_dim is absent: set head_dim"},
		{"odd head width", Tiny(), map[string]any{"head_dim": 7}, "the head width 7 (head_dim, or hidden_size/num_attention_heads) is odd"},
		{"negative head_dim", Tiny(), map[string]any{"head_dim": -8}, "head_dim -8 must be positive, or null"},
		{"negative kv heads", Tiny(), map[string]any{"num_key_value_heads": -2}, "num_key_value_heads -2 must be positive, or null"},
		{"negative sliding_window", TinyMistral(), map[string]any{"sliding_window": -1}, "mistral config: sliding_window -1 must be positive, or null"},
		{"zero vocab", Tiny(), map[string]any{"vocab_size": 0}, "vocab_size 0 must be in [1, 2147483647]"},
		{"huge width", Tiny(), map[string]any{"hidden_size": 1 << 40}, "hidden_size 1099511627776 must be in [1, 2147483647]"},
		{"too deep", Tiny(), map[string]any{"num_hidden_layers": 1 << 20}, "num_hidden_layers 1048576 must be in [1, 65536]"},
		{"zero positions", Tiny(), map[string]any{"max_position_embeddings": 0}, "max_position_embeddings 0 must be in"},
		{"parameter count overflows", Tiny(), map[string]any{"vocab_size": math.MaxInt32, "hidden_size": math.MaxInt32 - 3,
			"num_attention_heads": 2, "num_key_value_heads": 2, "num_hidden_layers": 65536, "intermediate_size": math.MaxInt32},
			"the parameter count overflows int"},
		{"gelu", Tiny(), map[string]any{"hidden_act": "gelu"}, `hidden_act "gelu" is not supported: zoo's SwiGLU gate is silu`},
		{"rms_norm_eps zero", Tiny(), map[string]any{"rms_norm_eps": 0}, "rms_norm_eps 0 must be positive"},
		{"initializer_range negative", Tiny(), map[string]any{"initializer_range": -1}, "initializer_range -1 must be finite and not negative"},
		{"attention_dropout 1", Tiny(), map[string]any{"attention_dropout": 1}, "attention_dropout 1 must be in [0, 1)"},
		{"rope linear", Tiny(), map[string]any{"rope_scaling": map[string]any{"rope_type": "linear", "factor": 2.0}},
			`rope_type "linear" (in rope_scaling) is not implemented: zoo implements "default" and "llama3"`},
		{"rope dynamic (legacy type key)", Tiny(), map[string]any{"rope_scaling": map[string]any{"type": "dynamic", "factor": 2.0}},
			`rope_type "dynamic" (in rope_scaling) is not implemented`},
		{"rope yarn", TinyQwen2(), map[string]any{"rope_scaling": map[string]any{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}},
			`qwen2 config: rope_type "yarn" (in rope_scaling) is not implemented`},
		{"rope longrope in rope_parameters", Tiny(), map[string]any{"rope_parameters": map[string]any{"rope_type": "longrope", "rope_theta": 10000.0}},
			`rope_type "longrope" (in rope_parameters) is not implemented`},
		{"rope type and rope_type disagree", Tiny(), map[string]any{"rope_scaling": map[string]any{"rope_type": "llama3", "type": "linear"}},
			`rope_type "llama3" and type "linear" disagree`},
		{"llama3 without factor", Tiny(), map[string]any{"rope_scaling": with(llama3, "factor", nil)},
			"rope_type llama3 (in rope_scaling) needs factor, a finite number more than 0, not 0"},
		{"llama3 without original_max_position_embeddings", Tiny(), map[string]any{"rope_scaling": with(llama3, "original_max_position_embeddings", nil)},
			"needs original_max_position_embeddings"},
		{"llama3 fractional positions", Tiny(), map[string]any{"rope_scaling": with(llama3, "original_max_position_embeddings", 8192.5)},
			"original_max_position_embeddings 8192.5 is not a whole number"},
		{"llama3 high not above low", Tiny(), map[string]any{"rope_scaling": with(llama3, "high_freq_factor", 1.0)},
			"needs high_freq_factor 1 more than low_freq_factor 1"},
		{"rope_theta disagrees with rope_parameters", Tiny(), map[string]any{"rope_theta": 20000.0, "rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 10000.0}},
			"rope_theta 20000 and the rope_theta 10000 in rope_parameters disagree"},
		{"rope_scaling and rope_parameters disagree", Tiny(), map[string]any{"rope_scaling": llama3, "rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 10000.0}},
			"rope_scaling {"},
		{"rope_theta 1", Tiny(), map[string]any{"rope_theta": 1}, "rope_theta 1 must be finite and more than 1"},
		{"partial_rotary_factor", Tiny(), map[string]any{"partial_rotary_factor": 0.5}, "partial_rotary_factor 0.5 is not supported"},
		{"partial_rotary_factor in rope_parameters", Tiny(), map[string]any{"rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}},
			"partial_rotary_factor 0.25 (in rope_parameters) is not supported"},
		{"problem_type regression", Tiny(), map[string]any{"problem_type": "regression"}, `problem_type "regression" is not supported`},
		{"eos outside", Tiny(), map[string]any{"eos_token_id": []int{2, 96}}, "eos_token_id 96 is outside the vocabulary of 96"},
		{"bos negative", Tiny(), map[string]any{"bos_token_id": -1}, "bos_token_id -1 is outside the vocabulary"},
		{"pad outside", Tiny(), map[string]any{"pad_token_id": 100}, "pad_token_id 100 is outside the vocabulary"},
		{"eos not an id", Tiny(), map[string]any{"eos_token_id": "two"}, `"two" is neither a token id nor a list of them`},
		{"null size", Tiny(), map[string]any{"hidden_size": nil}, "hidden_size is null"},
		{"another family", Tiny(), map[string]any{"model_type": "gpt2"}, `model_type "gpt2" is not one of llama, qwen2, mistral`},
		{"num_labels disagrees", Tiny(), map[string]any{"id2label": map[string]string{"0": "a", "1": "b"}, "num_labels": 3}, "num_labels 3 disagrees"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := read(edited(t, c.base, c.edits))
			require.ErrorContains(t, err, c.want)
		})
	}
}

// Values that transformers computes as zoo does are accepted: the
// refused keys at their harmless values, pretraining_tp (the same product
// in slices), attention_dropout (training only), swish, a default
// rope_scaling carrying another type's settings, the legacy "type" key.
func TestConfigAccepts(t *testing.T) {
	for _, edits := range []map[string]any{
		{"pretraining_tp": 4}, {"attention_dropout": 0.1}, {"hidden_act": "swish"},
		{"partial_rotary_factor": 1.0}, {"partial_rotary_factor": nil}, {"problem_type": "single_label_classification"},
		{"rope_scaling": nil}, {"rope_scaling": map[string]any{"rope_type": "default", "factor": 2.0}},
		{"rope_scaling": map[string]any{"type": "llama3", "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}},
		{"rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 1.0}},
		{"rope_theta": 10000.0, "rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 10000.0}},
		{"rope_scaling": map[string]any{"rope_type": "default"}, "rope_parameters": map[string]any{"rope_type": "default"}},
		{"head_dim": 16}, {"head_dim": nil}, {"num_key_value_heads": nil}, {"eos_token_id": []int{}}, {"eos_token_id": nil},
		{"bos_token_id": nil}, {"pad_token_id": 0}, {"sliding_window": 8}, {"use_sliding_window": true}, {"layer_types": []string{"full_attention", "full_attention"}},
	} {
		b := edited(t, Tiny(), edits)
		c, err := read(b)
		require.NoError(t, err, "%v", edits)
		out, err := json.Marshal(c)
		require.NoError(t, err, "%v", edits)
		back, err := read(out)
		require.NoError(t, err, "%s", out)
		require.Equal(t, c, back, "%s", out)
	}
	// head_dim may differ from hidden_size/num_attention_heads (Mistral
	// NeMo: 5120 wide, 32 heads of 128).
	c := Tiny()
	c.HeadDim = 16
	require.NoError(t, c.Validate())
	require.Equal(t, 16, c.HeadDimension())
	require.Equal(t, []int{64, 32}, c.Tensors()[1].Shape, "q_proj is (heads·head_dim, hidden)")
}

// The bias rule of each model type: llama's from attention_bias and
// mlp_bias, Qwen2's q/k/v always and o never whatever the config.json
// says, Mistral's none; Tensors and NumParams follow it.
func TestBiases(t *testing.T) {
	for _, c := range []struct {
		mt         string
		attn, mlp  bool
		want       Biases
		biasNames  []string
		paramsMore int64
	}{
		{ModelLlama, false, false, Biases{}, nil, 0},
		{ModelLlama, true, false, Biases{QKV: true, O: true}, []string{"q_proj", "k_proj", "v_proj", "o_proj"}, 2 * (32 + 16 + 16 + 32)},
		{ModelLlama, false, true, Biases{MLP: true}, []string{"gate_proj", "up_proj", "down_proj"}, 2 * (64 + 64 + 32)},
		{ModelQwen2, false, false, Biases{QKV: true}, []string{"q_proj", "k_proj", "v_proj"}, 2 * (32 + 16 + 16)},
		{ModelQwen2, true, true, Biases{QKV: true}, []string{"q_proj", "k_proj", "v_proj"}, 2 * (32 + 16 + 16)},
		{ModelMistral, true, true, Biases{}, nil, 0},
	} {
		cfg := Tiny()
		cfg.ModelType = c.mt
		cfg.AttentionBias, cfg.MLPBias = c.attn, c.mlp
		require.NoError(t, cfg.Validate())
		require.Equal(t, c.want, cfg.Biases(), "%+v", c)
		var got []string
		for _, x := range cfg.Tensors() {
			if mod, ok := strings.CutSuffix(x.Name, ".bias"); ok && strings.HasPrefix(mod, "model.layers.0.") {
				got = append(got, mod[strings.LastIndex(mod, ".")+1:])
			}
		}
		want := slices.Clone(c.biasNames)
		require.ElementsMatch(t, want, got, "%+v", c)
		require.Equal(t, int64(24_736)+c.paramsMore, cfg.NumParams(), "%+v", c)
		require.Equal(t, cfg.NumParams(), sumTensors(cfg))
	}
}

// CheckLength refuses a sequence longer than max_position_embeddings, or
// than the sliding window where the model type uses it.
func TestCheckLength(t *testing.T) {
	qwenOn := TinyQwen2()
	qwenOn.UseSlidingWindow, qwenOn.SlidingWindow = true, 32
	qwenOff := TinyQwen2()
	qwenOff.SlidingWindow = 32
	llama := Tiny()
	llama.SlidingWindow = 8 // not llama's: kept, computes nothing
	for _, c := range []struct {
		name string
		cfg  Config
		n    int
		want string
	}{
		{"llama at the limit", Tiny(), 64, ""},
		{"llama past the limit", Tiny(), 65, "a sequence of 65 tokens is longer than max_position_embeddings 64"},
		{"llama ignores sliding_window", llama, 64, ""},
		{"mistral within its window", TinyMistral(), 16, ""},
		{"mistral past its window", TinyMistral(), 17, "a sequence of 17 tokens is longer than sliding_window 16, and zoo does not implement sliding-window attention"},
		{"qwen2 window off", qwenOff, 64, ""},
		{"qwen2 window on", qwenOn, 33, "longer than sliding_window 32"},
		{"qwen2 within", qwenOn, 32, ""},
	} {
		err := c.cfg.CheckLength(c.n)
		if c.want == "" {
			require.NoError(t, err, c.name)
		} else {
			require.ErrorContains(t, err, c.want, c.name)
		}
	}
	m := TinyMistral()
	m.SlidingWindow = 0 // null: Mistral v0.2's no window
	require.NoError(t, m.CheckLength(64))
}

// The rotary setting resolves from rope_theta, rope_scaling or
// rope_parameters as transformers 4.x and 5.x read them.
func TestRopeResolves(t *testing.T) {
	for _, c := range []struct {
		name  string
		edits map[string]any
		want  Rope
	}{
		{"absent: 10000", map[string]any{"rope_theta": "<delete>"}, Rope{Type: RopeDefault, Theta: 10000}},
		{"rope_theta", map[string]any{"rope_theta": 500000.0}, Rope{Type: RopeDefault, Theta: 500000}},
		{"5.x rope_parameters", map[string]any{"rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 1e6}}, Rope{Type: RopeDefault, Theta: 1e6}},
		{"legacy type", map[string]any{"rope_scaling": map[string]any{"type": "llama3", "factor": 2.0, "low_freq_factor": 1.0, "high_freq_factor": 2.0, "original_max_position_embeddings": 32}},
			Rope{Type: RopeLlama3, Theta: 10000, Factor: 2, LowFreqFactor: 1, HighFreqFactor: 2, OriginalMaxPositionEmbeddings: 32, legacyType: true}},
		{"empty rope_type", map[string]any{"rope_scaling": map[string]any{"factor": 2.0}}, Rope{Type: RopeDefault, Theta: 10000, Factor: 2}},
	} {
		c2, err := read(edited(t, Tiny(), c.edits))
		require.NoError(t, err, c.name)
		r, err := c2.Rope()
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, r, c.name)
	}
}

// A Rope and a TokenIDs write what they read: the spelling of the type
// key, keys of other types, one id or a list.
func TestRopeAndIDsJSON(t *testing.T) {
	for _, s := range []string{
		`{"factor":8,"rope_type":"llama3"}`,
		`{"factor":8,"type":"linear"}`,
		`{"factor":8,"rope_type":"yarn","type":"yarn","beta_fast":32,"mscale":null}`,
		`{"rope_theta":10000,"rope_type":"default"}`,
	} {
		var r Rope
		require.NoError(t, json.Unmarshal([]byte(s), &r))
		b, err := json.Marshal(r)
		require.NoError(t, err)
		require.JSONEq(t, s, string(b))
	}
	_, err := json.Marshal(Rope{Extra: map[string]json.RawMessage{"factor": json.RawMessage("2")}})
	require.ErrorContains(t, err, `Extra has "factor", which Rope models`)
	for _, s := range []string{`2`, `[2]`, `[1,2,3]`, `[]`} {
		var ids TokenIDs
		require.NoError(t, json.Unmarshal([]byte(s), &ids))
		b, err := json.Marshal(ids)
		require.NoError(t, err)
		require.Equal(t, s, string(b))
	}
	require.Equal(t, &TokenIDs{IDs: []int{5}}, IDs(5))
	require.Equal(t, &TokenIDs{IDs: []int{5, 6}, List: true}, IDs(5, 6))
}

// Validate refuses Extra holding a modelled key, and MarshalJSON a
// Config of no known model type.
func TestConfigExtraAndType(t *testing.T) {
	c := Tiny()
	c.Extra = map[string]json.RawMessage{"hidden_size": json.RawMessage("8")}
	require.ErrorContains(t, c.Validate(), `Extra has "hidden_size", which Config models`)
	c.Extra = map[string]json.RawMessage{"partial_rotary_factor": json.RawMessage("0.5")}
	require.ErrorContains(t, c.Validate(), "partial_rotary_factor 0.5 is not supported")
	c = Tiny()
	c.ModelType = "gpt2"
	_, err := json.Marshal(c)
	require.ErrorContains(t, err, `model_type "gpt2" is not one of`)
	require.ErrorContains(t, c.Validate(), `model_type "gpt2" is not one of`)
}

// ReadConfig reads and validates a checkpoint's config.json, naming the
// file in its errors.
func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "configs", "qwen2.5-0.5b.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, models.ConfigFile), b, 0o644))
	c, err := ReadConfig(dir)
	require.NoError(t, err)
	require.Equal(t, int64(494_032_768), c.NumParams())

	require.NoError(t, os.WriteFile(filepath.Join(dir, models.ConfigFile), edited(t, Tiny(), map[string]any{"num_key_value_heads": 3}), 0o644))
	_, err = ReadConfig(dir)
	require.ErrorContains(t, err, filepath.Join(dir, models.ConfigFile)+": llama config: num_attention_heads 4 is not divisible by num_key_value_heads 3")

	_, err = ReadConfig(t.TempDir())
	require.ErrorContains(t, err, "no config.json")
	require.NoError(t, os.WriteFile(filepath.Join(dir, models.ConfigFile), []byte("{"), 0o644))
	_, err = ReadConfig(dir)
	require.ErrorContains(t, err, "unexpected end of JSON input")
	require.NoError(t, os.Truncate(filepath.Join(dir, models.ConfigFile), 1<<30)) // sparse
	_, err = ReadConfig(dir)
	require.ErrorContains(t, err, "larger than 16 MB")
}

// CheckMemory refuses a model that cannot fit, naming the largest part.
func TestCheckMemory(t *testing.T) {
	require.NoError(t, Tiny().CheckMemory())
	c := Tiny()
	c.VocabSize, c.HiddenSize, c.NumAttentionHeads, c.NumKeyValueHeads = math.MaxInt32, 1<<20, 1<<14, 1<<14
	require.NoError(t, c.Validate())
	require.ErrorContains(t, c.CheckMemory(), "lower vocab_size")
}

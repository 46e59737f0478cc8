package llama

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzConfig unmarshals arbitrary bytes as a config.json and validates the
// result: neither may panic, and neither may Rope, InvFreq, NumParams,
// CheckLength or CheckMemory on a valid one (Tensors is left out: a valid
// config may list millions of tensors). A config that validates must
// marshal, and what it marshals to must read back as the same config and
// validate.
//
// One exception is known, as in gpt's FuzzConfig: id2label keys that are
// not integers read and validate, but MarshalJSON refuses them.
//
// Seeds: the presets as zoo writes them, the published config.json files
// of testdata/configs, and configs each refused for one reason.
func FuzzConfig(f *testing.F) {
	cls := Tiny()
	cls.ID2Label = map[string]string{"0": "neg", "1": "pos"}
	for _, c := range []Config{TinyLlama(), SmolLM135M(), Qwen25_0_5B(), Tiny(), TinyLlama3(), TinyQwen2(), TinyMistral(), cls} {
		b, err := json.Marshal(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "configs", "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{}`, `null`, `[]`,
		`{"model_type":"qwen2"}`, `{"model_type":"mistral","sliding_window":null}`, `{"model_type":"gpt2"}`,
		`{"num_attention_heads":6,"num_key_value_heads":4}`,
		`{"hidden_size":30,"num_attention_heads":4,"head_dim":null}`,
		`{"head_dim":7}`, `{"vocab_size":1e400}`, `{"num_hidden_layers":-1}`,
		`{"hidden_act":"gelu"}`, `{"rms_norm_eps":0}`,
		`{"rope_scaling":{"rope_type":"yarn","factor":4}}`,
		`{"rope_scaling":{"type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192}}`,
		`{"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":4,"high_freq_factor":1,"original_max_position_embeddings":1e300}}`,
		`{"rope_parameters":{"rope_type":"default","rope_theta":500000,"partial_rotary_factor":0.5}}`,
		`{"rope_theta":1,"rope_parameters":{"rope_theta":2}}`,
		`{"eos_token_id":[1,2,999999]}`, `{"eos_token_id":"x"}`, `{"bos_token_id":null,"pad_token_id":-1}`,
		`{"id2label":{"x":"a"}}`, `{"num_labels":3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Config
		if err := json.Unmarshal(data, &c); err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			return
		}
		r, err := c.Rope()
		if err != nil {
			t.Fatalf("Rope of a valid config: %v", err)
		}
		if d := c.HeadDimension(); d <= 1<<16 { // a larger one is valid, but its table is gigabytes
			if _, err := r.InvFreq(d); err != nil {
				t.Fatalf("InvFreq of a valid config: %v", err)
			}
		}
		_ = c.NumParams()
		_ = c.CheckLength(c.MaxPositionEmbeddings)
		_ = c.CheckMemory()
		b, err := json.Marshal(c)
		if err != nil && strings.Contains(err.Error(), "id2label key") {
			return // the known exception above
		}
		if err != nil {
			t.Fatalf("marshal of a valid config: %v", err)
		}
		var again Config
		if err := json.Unmarshal(b, &again); err != nil {
			t.Fatalf("reading back %s: %v", b, err)
		}
		if err := again.Validate(); err != nil {
			t.Fatalf("%s read back does not validate: %v", b, err)
		}
		b2, err := json.Marshal(again)
		if err != nil || string(b2) != string(b) {
			t.Fatalf("written again differently:\n%s\n%s (%v)", b, b2, err)
		}
	})
}

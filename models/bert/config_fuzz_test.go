package bert

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzConfig unmarshals arbitrary bytes as a config.json and validates the
// result: neither may panic. A config that validates must marshal, and
// what it marshals to must read back and validate (id2label keys that are
// not integers are refused by MarshalJSON, as in GPT's Config).
//
// Seeds: the presets as the zoo writes them, the parity checkpoint's
// config.json, and configs each refused for one reason.
func FuzzConfig(f *testing.F) {
	cls := Tiny()
	cls.ID2Label = map[string]string{"0": "neg", "1": "pos"}
	dcls := DistilBertBase()
	dcls.ID2Label = map[string]string{"0": "NEGATIVE", "1": "POSITIVE"}
	for _, c := range []Config{Base(), Tiny(), Mini(), Small(), Medium(), cls, RobertaBase(), DistilBertBase(), dcls} {
		b, err := json.Marshal(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "parity", "config.json")); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"model_type":"gpt2"}`, `{"vocab_size":-1}`, `{"vocab_size":1e400}`,
		`{"hidden_size":8,"num_attention_heads":0}`, `{"hidden_act":"tanh"}`, `{"hidden_dropout_prob":1.5}`,
		`{"layer_norm_eps":-1}`, `{"pad_token_id":null}`, `{"classifier_dropout":null}`, `{"classifier_dropout":2}`,
		`{"num_labels":3,"id2label":{"0":"a"}}`, `{"id2label":{"x":"a"}}`, `{"is_decoder":true}`,
		`{"position_embedding_type":"relative_key"}`, `{"chunk_size_feed_forward":1}`,
		`{"model_type":"distilbert","dim":8,"n_heads":3}`, `{"model_type":"distilbert","sinusoidal_pos_embds":true}`,
		`{"model_type":"distilbert","hidden_size":8,"dim":16}`, `{"model_type":"distilbert","qa_dropout":1}`,
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
		b, err := json.Marshal(c)
		if err != nil && strings.Contains(err.Error(), "id2label key") {
			return
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
	})
}

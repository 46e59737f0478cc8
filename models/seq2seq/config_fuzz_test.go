package seq2seq

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzConfig unmarshals arbitrary bytes as a config.json and validates the
// result: neither may panic. A config that validates must marshal, and
// what it marshals to must read back and validate.
//
// Seeds: the presets as the zoo writes them, the Marian and parity
// checkpoints' config.json files, the zoo's older "seq2seq" form, and
// configs each refused for one reason.
func FuzzConfig(f *testing.F) {
	for _, c := range []Config{Tiny(), Small(), Base()} {
		b, err := json.Marshal(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, dir := range []string{"marian/opus_shared", "marian/separate_untied", "parity/post_shared", "parity/pre_separate"} {
		if b, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(dir), "config.json")); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{}`,
		`null`,
		`[]`,
		`{"model_type":"marian"}`,
		`{"model_type":"seq2seq","d_model":32,"num_heads":4,"d_ff":64,"num_encoder_layers":1,"num_decoder_layers":1,"max_len":16,"src_vocab_size":20,"tgt_vocab_size":20,"share_embeddings":true,"tie_output":true,"activation":"relu","layer_norm_eps":1e-5,"pad_token_id":0,"bos_token_id":1,"eos_token_id":2}`,
		`{"d_model":32,"num_heads":4,"d_ff":64,"num_encoder_layers":1,"num_decoder_layers":1,"max_len":16,"src_vocab_size":20,"tgt_vocab_size":30,"norm_first":true,"activation":"gelu","layer_norm_eps":1e-5,"pad_token_id":0,"bos_token_id":1,"eos_token_id":2,"sinusoidal_layout":"interleaved"}`,
		`{"model_type":"bart"}`,
		`{"model_type":3}`,
		`{"vocab_size":10}`,
		`{"model_type":"marian","vocab_size":10,"decoder_vocab_size":12}`,
		`{"model_type":"marian","encoder_attention_heads":4,"decoder_attention_heads":8}`,
		`{"model_type":"marian","eos_token_id":[0,1]}`,
		`{"model_type":"marian","eos_token_id":1.5}`,
		`{"model_type":"marian","eos_token_id":1e300}`,
		`{"model_type":"marian","normalize_before":true}`,
		`{"model_type":"marian","normalize_before":true,"add_final_layer_norm":true}`,
		`{"model_type":"marian","add_final_layer_norm":true}`,
		`{"model_type":"marian","static_position_embeddings":false}`,
		`{"model_type":"marian","pruned_heads":{"0":[1]}}`,
		`{"model_type":"marian","hidden_size":7}`,
		`{"model_type":"marian","activation_function":"tanh"}`,
		`{"model_type":"marian","sinusoidal_layout":"nope"}`,
		`{"model_type":"marian","d_model":-8,"max_position_embeddings":1}`,
		`{"model_type":"marian","layer_norm_eps":0}`,
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

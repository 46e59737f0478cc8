package decode_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/decode"
)

// Derive the generation_config.json that transformers' save_pretrained
// writes for a config.json (GenerationConfig.from_model_config): the
// generation attributes that are not GenerationConfig's defaults, and
// transformers_version; then read it back as a checkpoint's own file.
func ExampleFromModelConfig() {
	var config map[string]json.RawMessage
	if err := json.Unmarshal([]byte(`{"model_type": "gpt2", "n_embd": 768, "bos_token_id": 50256,
		"eos_token_id": 50256, "use_cache": true, "max_length": 20, "num_beams": 4,
		"task_specific_params": {"text-generation": {"do_sample": true}}, "transformers_version": "4.46.0"}`), &config); err != nil {
		fmt.Println(err)
		return
	}
	b, err := decode.MarshalGenerationConfig(decode.FromModelConfig(config))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(b))

	dir, err := os.MkdirTemp("", "genconfig")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, decode.GenerationFile), b, 0o644); err != nil {
		fmt.Println(err)
		return
	}
	read, err := decode.ReadGenerationConfig(dir) // bounded: decode.MaxGenerationBytes
	fmt.Println(string(read) == string(b), err)
	// Output:
	// {
	//   "bos_token_id": 50256,
	//   "eos_token_id": 50256,
	//   "num_beams": 4,
	//   "transformers_version": "4.46.0"
	// }
	// true <nil>
}

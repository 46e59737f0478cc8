package decode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/internal/jsonconfig"
)

// MaxGenerationBytes bounds a generation_config.json read by
// ReadGenerationConfig: real ones are a few hundred bytes.
const MaxGenerationBytes = 1 << 20

// ReadGenerationConfig reads dir/generation_config.json as it is, to be
// written back byte for byte: nil when there is none. A file larger than
// MaxGenerationBytes, or one that is not a JSON object, is an error naming
// it. Safe for concurrent use.
func ReadGenerationConfig(dir string) (json.RawMessage, error) {
	path := filepath.Join(dir, GenerationFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxGenerationBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > MaxGenerationBytes {
		return nil, fmt.Errorf("%s is larger than %d KB: not a generation config", path, MaxGenerationBytes>>10)
	}
	if _, err := GenerationObject(b); err != nil {
		return nil, fmt.Errorf("%s: %w; fix or remove it (transformers then reads config.json's generation fields)", path, err)
	}
	return b, nil
}

// GenerationObject decodes b, which must be a JSON object (a
// generation_config.json's text).
func GenerationObject(b []byte) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if obj == nil {
		return nil, errors.New("null, not a JSON object")
	}
	return obj, nil
}

// FromModelConfig returns the keys of a generation_config.json that
// transformers' save_pretrained writes for a model whose config.json has
// the keys in configJSON, as GenerationConfig.from_model_config derives
// it: the GenerationConfig attributes (GenerationDefaults) whose values
// are not the defaults, and transformers_version when config.json has
// one. Other keys (task_specific_params, the model's own) are left out.
// A family adds its own rules to the result (seq2seq's pad ban) and
// writes it with MarshalGenerationConfig.
func FromModelConfig(configJSON map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for k, v := range configJSON {
		if def, ok := GenerationDefaults[k]; ok && !jsonconfig.Same(v, def) {
			out[k] = v
		}
	}
	if v, ok := configJSON["transformers_version"]; ok {
		out["transformers_version"] = v
	}
	return out
}

// SettingKeys are the generation fields that a family's generate (and
// zoo generate) takes as the defaults of settings not given:
// max_length, max_new_tokens, do_sample, temperature, top_k, top_p,
// num_beams, num_return_sequences, length_penalty and early_stopping.
// For these an absent field and a field at GenerationConfig's default are
// not the same to the zoo (do_sample false is greedy, absent is the zoo's
// default sampling; length_penalty 1 is Hugging Face's penalty, absent is
// none), while transformers reads both alike.
var SettingKeys = []string{"max_length", "max_new_tokens", "do_sample", "temperature", "top_k", "top_p",
	"num_beams", "num_return_sequences", "length_penalty", "early_stopping"}

// MarshalGenerationConfig writes the keys of a generation_config.json as
// transformers writes the file: indented by two spaces, keys sorted, a
// final newline.
func MarshalGenerationConfig(keys map[string]json.RawMessage) ([]byte, error) {
	js, err := json.MarshalIndent(keys, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(js, '\n'), nil
}

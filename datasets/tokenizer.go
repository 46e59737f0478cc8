package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Tokenizer maps text to token ids in [0, VocabSize()) and back.
type Tokenizer interface {
	// Encode returns the ids of text, with no special tokens added around
	// it. A character the tokenizer cannot represent is an error.
	Encode(text string) ([]int, error)
	// Decode returns the text of ids. An id outside [0, VocabSize()) is an
	// error.
	Decode(ids []int) (string, error)
	// VocabSize is one more than the largest id Encode can return: the
	// number of rows of the embedding table.
	VocabSize() int
	// MarshalJSON returns the serialised tokenizer, exactly what Save
	// writes. Tokenize hashes it to key its cache.
	MarshalJSON() ([]byte, error)
	// Save writes the serialised tokenizer to path atomically.
	Save(path string) error
}

// LoadTokenizer reads a tokenizer saved by Save: a Hugging Face
// tokenizer.json (ours, or one made by Hugging Face's tools, loaded with
// sugarme/tokenizer's pretrained.FromReader) or our character-level JSON.
func LoadTokenizer(path string) (Tokenizer, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("datasets: load tokenizer: %w", err)
	}
	tok, err := parseTokenizer(raw)
	if err != nil {
		return nil, fmt.Errorf("datasets: load tokenizer %s: %w", path, err)
	}
	return tok, nil
}

// parseTokenizer tells the two formats apart by their top-level keys.
func parseTokenizer(raw []byte) (Tokenizer, error) {
	var head struct {
		Type  string          `json:"type"`
		Model json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	switch {
	case head.Type == charType:
		return parseChar(raw)
	case head.Model != nil:
		return parseHF(raw)
	}
	return nil, errors.New(`neither a tokenizer.json (no "model") nor a character tokenizer (no "type": "` + charType + `")`)
}

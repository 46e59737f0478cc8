// Package jsonconfig reads the pipelines' JSON config files strictly.
package jsonconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// Read decodes the JSON file at path over base: keys the file leaves out
// keep base's values, and unknown keys and wrong types are errors naming the
// file.
func Read[T any](path string, base T) (T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return base, fmt.Errorf("config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	cfg := base
	if err := dec.Decode(&cfg); err != nil {
		return base, fmt.Errorf("config: %s: %w", path, err)
	}
	return cfg, nil
}

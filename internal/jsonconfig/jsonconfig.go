// Package jsonconfig reads the pipelines' JSON config files strictly, and
// compares and prints config values (Same, Compact).
package jsonconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
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

// ReadSection is Read for a config that nests another under key (a
// model's config, whose own UnmarshalJSON refuses what it does not
// implement): that section is decoded alone into section(&cfg), then the
// rest of the file strictly over base. Errors name the file.
func ReadSection[T any](path string, base T, key string, section func(*T) any) (T, error) {
	b, raw, err := readObject(path)
	if err != nil {
		return base, err
	}
	cfg := base
	if m, ok := raw[key]; ok {
		if err := json.Unmarshal(m, section(&cfg)); err != nil {
			return base, fmt.Errorf("%s: config: %s: %w", path, key, err)
		}
		delete(raw, key)
		if b, err = json.Marshal(raw); err != nil {
			return base, err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return base, fmt.Errorf("%s: config: %w", path, err)
	}
	return cfg, nil
}

// Section returns the value of the top-level key of the JSON file at path
// as written, or nil when the file has no such key. Read reports the
// file's other errors; this one reports only what stops it finding key.
func Section(path, key string) (json.RawMessage, error) {
	_, raw, err := readObject(path)
	if err != nil {
		return nil, err
	}
	return raw[key], nil
}

// readObject reads the file at path and the JSON object in it: its keys
// and their values as written. Errors name the file.
func readObject(path string) ([]byte, map[string]json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, nil, fmt.Errorf("%s: config: %w", path, err)
	}
	return b, raw, nil
}

// Same reports whether the JSON text v holds the value of x (x is
// marshalled first, so a json.RawMessage compares as the value it holds):
// the one comparison of config values by meaning rather than by bytes.
func Same(v json.RawMessage, x any) bool {
	want, err := json.Marshal(x)
	if err != nil {
		return false
	}
	var a, b any
	if json.Unmarshal(v, &a) != nil || json.Unmarshal(want, &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// Compact is the JSON text b on one line, for messages (b itself when it
// is not JSON).
func Compact(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}

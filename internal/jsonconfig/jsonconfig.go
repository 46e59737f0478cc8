// Package jsonconfig reads the pipelines' JSON config files strictly, and
// compares and prints config values (Same, Compact).
package jsonconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
)

// Option changes how Read and ReadSection read a file.
type Option func(*options)

type options struct {
	renames map[string]string
	notes   *[]string
}

// Renames reads each top-level key of the file that is a key of old as
// the name old maps it to, appending a deprecation line to notes for each;
// a file that gives both an old name and its new one is refused.
func Renames(old map[string]string, notes *[]string) Option {
	return func(o *options) { o.renames, o.notes = old, notes }
}

// Rename applies old (deprecated name → current name) to the top-level
// keys of raw in place, returning a deprecation line per old name found,
// sorted. Giving both names of one setting is an error naming both.
func Rename(raw map[string]json.RawMessage, old map[string]string) ([]string, error) {
	var notes []string
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		now, ok := old[k]
		if !ok {
			continue
		}
		if _, both := raw[now]; both {
			return nil, fmt.Errorf("config: both %s and %s are given: they are one setting (%s is its old name); keep %s", k, now, k, now)
		}
		raw[now] = raw[k]
		delete(raw, k)
		notes = append(notes, fmt.Sprintf("config: %s is deprecated: use %s (Hugging Face's TrainingArguments name)", k, now))
	}
	return notes, nil
}

// Read decodes the JSON file at path over base: keys the file leaves out
// keep base's values, and unknown keys and wrong types are errors naming the
// file.
func Read[T any](path string, base T, opts ...Option) (T, error) {
	return ReadSection(path, base, "", nil, opts...)
}

// ReadSection is Read for a config that nests another under key (a
// model's config, whose own UnmarshalJSON refuses what it does not
// implement): that section is decoded alone into section(&cfg), then the
// rest of the file strictly over base. Errors name the file. An empty key
// reads no section.
func ReadSection[T any](path string, base T, key string, section func(*T) any, opts ...Option) (T, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	b, raw, err := readObject(path)
	if err != nil {
		return base, err
	}
	cfg := base
	changed := false
	if o.renames != nil {
		notes, err := Rename(raw, o.renames)
		if err != nil {
			return base, fmt.Errorf("%s: %w", path, err)
		}
		if o.notes != nil {
			*o.notes = append(*o.notes, notes...)
		}
		changed = len(notes) > 0
	}
	if m, ok := raw[key]; ok && key != "" {
		if err := json.Unmarshal(m, section(&cfg)); err != nil {
			return base, fmt.Errorf("%s: config: %s: %w", path, key, err)
		}
		delete(raw, key)
		changed = true
	}
	if changed {
		if b, err = json.Marshal(raw); err != nil {
			return base, err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		if key == "" {
			return base, fmt.Errorf("config: %s: %w", path, err)
		}
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

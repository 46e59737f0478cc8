package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/d73a19ff/zoo/internal/jsonconfig"
)

// What every family's config.json shares with Hugging Face's
// PretrainedConfig: labels and the keys a family keeps without modelling.

// readNumLabels applies config.json's num_labels (or the older
// _num_labels) to id2label as transformers does: without id2label it names
// LABEL_0, LABEL_1, …; with id2label the count must agree. The names are
// made here, before a Validate can look at the config, so a count is
// bounded by MaxLabels first (num_labels 2e9 would take minutes and
// gigabytes). family prefixes the errors ("gpt config").
func readNumLabels(raw map[string]json.RawMessage, id2label map[string]string, family string) (map[string]string, error) {
	for _, key := range []string{"num_labels", "_num_labels"} {
		b, ok := raw[key]
		if !ok || string(bytes.TrimSpace(b)) == "null" {
			continue
		}
		var n int
		if err := json.Unmarshal(b, &n); err != nil {
			return id2label, fmt.Errorf("%s: %s: %w", family, key, err)
		}
		if n < 0 || n > MaxLabels {
			return id2label, fmt.Errorf("%s: %s %d must be in [0, %d]", family, key, n, MaxLabels)
		}
		if _, ok := raw["id2label"]; ok {
			if n != len(id2label) {
				return id2label, fmt.Errorf("%s: %s %d disagrees with the %d labels of id2label", family, key, n, len(id2label))
			}
			continue
		}
		id2label = map[string]string{}
		for i := 0; i < n; i++ {
			id2label[strconv.Itoa(i)] = "LABEL_" + strconv.Itoa(i)
		}
	}
	return id2label, nil
}

// keepExtra adds to extra every key of raw that is not a key of modeled
// (the keys the family reads), so that it is written back as it was read.
func keepExtra(raw map[string]json.RawMessage, modeled map[string]bool, extra map[string]json.RawMessage) map[string]json.RawMessage {
	for k, v := range raw {
		if _, ok := modeled[k]; ok {
			continue
		}
		if extra == nil {
			extra = map[string]json.RawMessage{}
		}
		extra[k] = v
	}
	return extra
}

// Refusal is a config.json key whose values, other than those OK accepts,
// make Hugging Face's model compute what the family does not implement.
type Refusal struct {
	Key string
	OK  func(v any) bool // the values the family computes the same as transformers
	Why string           // what is not supported and what to do
}

// CheckRefused reports the first refused value in raw, naming the key, its
// value and why; family prefixes the error ("gpt config").
func CheckRefused(raw map[string]json.RawMessage, refused []Refusal, family string) error {
	for _, r := range refused {
		b, ok := raw[r.Key]
		if !ok {
			continue
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("%s: %s: %w", family, r.Key, err)
		}
		if !r.OK(v) {
			return fmt.Errorf("%s: %s %s %s", family, r.Key, CompactJSON(b), r.Why)
		}
	}
	return nil
}

// CheckExtra rejects Extra keys that the family's Config models (set the
// field instead) and refused values.
func CheckExtra(extra map[string]json.RawMessage, modeled map[string]bool, refused []Refusal, family string) error {
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if _, ok := modeled[k]; ok {
			return fmt.Errorf("%s: Extra has %q, which Config models: set the field instead", family, k)
		}
	}
	return CheckRefused(extra, refused, family)
}

// CompactJSON is b without insignificant space, for messages (b itself if it
// is not JSON).
func CompactJSON(b []byte) string { return jsonconfig.Compact(b) }

// Labels are the class names of id2label by id: its keys must be "0" to
// "n-1", each once ("00" beside "0" is refused, not read as a duplicate);
// an empty id2label has none (nil). family prefixes the errors ("gpt
// config"). Every family's Config.Labels is this, so each loader takes its
// labels from the checkpoint itself.
func Labels(id2label map[string]string, family string) ([]string, error) {
	labels := make([]string, len(id2label))
	seen := make([]bool, len(labels))
	for k, l := range id2label {
		n, err := strconv.Atoi(k)
		if err != nil || n < 0 || n >= len(labels) || seen[n] || k != strconv.Itoa(n) {
			return nil, fmt.Errorf("%s: id2label ids must be 0…%d, each once; found %q", family, len(labels)-1, k)
		}
		labels[n], seen[n] = l, true
	}
	if len(labels) == 0 {
		return nil, nil
	}
	return labels, nil
}

// Label2ID inverts a config's id2label ({"0": "neg", …}) into
// transformers' label2id ({"neg": 0, …}); an id that is not an integer
// is an error naming the family's config.
func Label2ID(id2label map[string]string, family string) (map[string]int, error) {
	if len(id2label) == 0 {
		return nil, nil
	}
	out := make(map[string]int, len(id2label))
	for id, l := range id2label {
		n, err := strconv.Atoi(id)
		if err != nil {
			return nil, fmt.Errorf("%s: id2label key %q is not an integer", family, id)
		}
		out[l] = n
	}
	return out, nil
}

// checkNotNull refuses a null value for a key the family reads (modeled)
// and that may not be null (modeled[key] false), in name order:
// transformers would read null differently from any value the config can
// hold.
func checkNotNull(raw map[string]json.RawMessage, modeled map[string]bool, family string) error {
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if nullable, ok := modeled[k]; ok && !nullable && string(bytes.TrimSpace(raw[k])) == "null" {
			return fmt.Errorf("%s: %s is null: transformers would read null differently from any value zoo can hold; write the value", family, k)
		}
	}
	return nil
}

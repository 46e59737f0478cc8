package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// What every family's config.json shares with Hugging Face's
// PretrainedConfig: labels and the keys a family keeps without modelling.

// ReadNumLabels applies config.json's num_labels (or the older
// _num_labels) to id2label as transformers does: without id2label it names
// LABEL_0, LABEL_1, …; with id2label the count must agree. The names are
// made here, before a Validate can look at the config, so a count is
// bounded by MaxLabels first (num_labels 2e9 would take minutes and
// gigabytes). family prefixes the errors ("gpt config").
func ReadNumLabels(raw map[string]json.RawMessage, id2label map[string]string, family string) (map[string]string, error) {
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

// KeepExtra adds to extra every key of raw that is not a key of modeled
// (the keys the family reads), so that it is written back as it was read.
func KeepExtra(raw map[string]json.RawMessage, modeled map[string]bool, extra map[string]json.RawMessage) map[string]json.RawMessage {
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

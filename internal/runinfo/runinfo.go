// Package runinfo records what a training run was started with (its data,
// tokenizer settings and model configuration) in run.json in the run
// directory, so that a resume can tell when it is given something else.
//
// A record is a flat map from a setting's name ("corpus", "tokenizer",
// "model.n_layer") to its value as compact JSON, so that a difference is
// reported by name with both values.
package runinfo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/d73a19ff/zoo/internal/atomicfile"
)

// File is the name of the record in a run directory.
const File = "run.json"

// Record maps a setting's name to its value as compact JSON.
type Record map[string]string

// Set records v, as JSON, under name.
func (r Record) Set(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("runinfo: %s: %w", name, err)
	}
	r[name] = string(b)
	return nil
}

// SetFields records each top-level JSON field of v (a struct or map) as
// prefix+field, leaving out the fields named in skip.
func (r Record) SetFields(prefix string, v any, skip ...string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("runinfo: %s: %w", strings.TrimSuffix(prefix, "."), err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return fmt.Errorf("runinfo: %s: %w", strings.TrimSuffix(prefix, "."), err)
	}
	for k, raw := range fields {
		if slices.Contains(skip, k) {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return fmt.Errorf("runinfo: %s%s: %w", prefix, k, err)
		}
		r[prefix+k] = buf.String()
	}
	return nil
}

// Write saves r as dir/run.json, creating dir.
func Write(dir string, r Record) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("runinfo: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ") // map keys sorted
	if err != nil {
		return fmt.Errorf("runinfo: %w", err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, File), append(b, '\n')); err != nil {
		return fmt.Errorf("runinfo: %w", err)
	}
	return nil
}

// Read loads dir/run.json. A missing file is an error wrapping
// fs.ErrNotExist.
func Read(dir string) (Record, error) {
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		return nil, fmt.Errorf("runinfo: %w", err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("runinfo: %s: %w", filepath.Join(dir, File), err)
	}
	if r == nil {
		return nil, fmt.Errorf("runinfo: %s: %w", filepath.Join(dir, File), errors.New("not a JSON object"))
	}
	return r, nil
}

// InitFromPrefix starts the "tokenizer" value of a run that took its
// tokenizer and model from a checkpoint (init_from).
const InitFromPrefix = "from init_from "

// Inherited returns now as a resume of run should compare it: when run
// took its tokenizer and model from init_from, the tokenizer and model.*
// settings given now were never used and cannot disagree, so they are
// replaced by run's.
func Inherited(run, now Record) Record {
	var tok string
	if json.Unmarshal([]byte(run["tokenizer"]), &tok) != nil || !strings.HasPrefix(tok, InitFromPrefix) {
		return now
	}
	out := Record{}
	for k, v := range now {
		if k != "tokenizer" && !strings.HasPrefix(k, "model.") {
			out[k] = v
		}
	}
	for k, v := range run {
		if k == "tokenizer" || strings.HasPrefix(k, "model.") {
			out[k] = v
		}
	}
	return out
}

// Change is a setting whose value differs between two records: Was and
// Now, "(none)" on the side that does not have it.
type Change struct{ Name, Was, Now string }

// Changes lists, sorted by name, each setting whose value differs between
// was and now, including one that only one of them has.
func Changes(was, now Record) []Change {
	var names []string
	for k := range was {
		names = append(names, k)
	}
	for k := range now {
		if _, ok := was[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	var out []Change
	for _, k := range names {
		a, okA := was[k]
		b, okB := now[k]
		if okA && okB && a == b {
			continue
		}
		if !okA {
			a = "(none)"
		}
		if !okB {
			b = "(none)"
		}
		out = append(out, Change{k, a, b})
	}
	return out
}

// Diff lists, sorted by name, each setting whose value differs between the
// run's record and now's, as "name: the run has X, now Y". A setting only
// one of them has is listed too, as "(none)" on the other side.
func Diff(run, now Record) []string {
	var out []string
	for _, c := range Changes(run, now) {
		out = append(out, fmt.Sprintf("%s: the run has %s, now %s", c.Name, c.Was, c.Now))
	}
	return out
}

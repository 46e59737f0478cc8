package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// -pairs writes one (lemmas, definition) line per synset, split by
// synset between the two files, and prints the TF-IDF baseline.
func TestConvertPairs(t *testing.T) {
	dir := writeFixture(t, fixture)
	out := filepath.Join(t.TempDir(), "out")
	var so, se bytes.Buffer
	if code := run([]string{"-pairs", "-dev-percent", "50", dir, out}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	var lines []string
	for _, name := range []string{"train_pairs.tsv", "dev_pairs.tsv"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSpace(string(b)), "\n")...)
	}
	slices.Sort(lines)
	want := []string{"big\tabove average in size", "cat\ta feline mammal", "dog, domestic dog\ta member of the genus Canis",
		"quickly\twith speed", "run\tmove fast by using one's feet"}
	if !slices.Equal(lines, want) {
		t.Errorf("pairs %q, want %q", lines, want)
	}
	if !strings.Contains(so.String(), "TF-IDF retrieval on dev: recall@1") {
		t.Errorf("summary %q", so.String())
	}
}

// TF-IDF finds a definition that shares a rare word with its anchor,
// and ranks a pair with no shared word by ties (against it).
func TestTFIDFRecall(t *testing.T) {
	at1, at10 := tfidfRecall([][2]string{{"feline", "a feline mammal"}, {"canine", "a canine mammal"}, {"zzz", "a mammal"}})
	if at1 != 2.0/3 || at10 != 1 {
		t.Errorf("recall@1 %v, recall@10 %v; want 2/3 and 1", at1, at10)
	}
}

package main

// -pairs: (lemmas, definition) pairs for sentence-embedding fine-tuning
// (zoo finetune bert --task embeddings, issue 38), split by synset as the
// questions are, with a TF-IDF retrieval baseline on the dev pairs.

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// convertPairs writes OUTDIR/train_pairs.tsv and dev_pairs.tsv: one
// synset a line, its lemmas joined by ", " TAB its definition (tabs
// in either read as spaces), and prints the TF-IDF baseline's
// retrieval (each dev anchor searching all dev definitions) on stdout.
func convertPairs(dir, out string, devPercent int, stdout io.Writer) error {
	var train, dev [][2]string
	for _, pf := range posFiles {
		path := filepath.Join(dir, pf.file)
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), maxLine)
		for line := 1; sc.Scan(); line++ {
			s, ok, err := parseLine(sc.Text())
			if err != nil {
				f.Close()
				return fmt.Errorf("%s:%d: %w", path, line, err)
			}
			if !ok {
				continue
			}
			p := [2]string{strings.ReplaceAll(strings.Join(s.lemmas, ", "), "\t", " "), strings.ReplaceAll(s.definition, "\t", " ")}
			h := fnv.New32a()
			h.Write([]byte(s.pos + s.offset))
			if int(h.Sum32()%100) < devPercent {
				dev = append(dev, p)
			} else {
				train = append(train, p)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if len(train) == 0 || len(dev) == 0 {
		return fmt.Errorf("%s: %d training and %d dev pairs: too few synsets to split", dir, len(train), len(dev))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, w := range []struct {
		name  string
		pairs [][2]string
	}{{"train_pairs.tsv", train}, {"dev_pairs.tsv", dev}} {
		var b strings.Builder
		for _, p := range w.pairs {
			b.WriteString(p[0] + "\t" + p[1] + "\n")
		}
		if err := os.WriteFile(filepath.Join(out, w.name), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	at1, at10 := tfidfRecall(dev)
	fmt.Fprintf(stdout, "%d training and %d dev pairs (lemmas TAB definition); TF-IDF retrieval on dev: recall@1 %.4f, recall@10 %.4f\n", len(train), len(dev), at1, at10)
	return nil
}

// words are s's lowercased runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// tfidfRecall is the retrieval of each pair's definition from its
// anchor among all the definitions, by the cosine of TF-IDF vectors
// (log-scaled idf over the definitions, raw counts), ties against the
// pair: the fractions found first and in the first 10.
func tfidfRecall(pairs [][2]string) (at1, at10 float64) {
	df := map[string]float64{}
	for _, p := range pairs {
		seen := map[string]bool{}
		for _, w := range words(p[1]) {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	n := float64(len(pairs))
	vec := func(s string) map[string]float64 {
		v := map[string]float64{}
		for _, w := range words(s) {
			v[w] += math.Log((1+n)/(1+df[w])) + 1
		}
		norm := 0.0
		for _, x := range v {
			norm += x * x
		}
		for w := range v {
			v[w] /= math.Max(math.Sqrt(norm), 1e-12)
		}
		return v
	}
	defs := make([]map[string]float64, len(pairs))
	for i, p := range pairs {
		defs[i] = vec(p[1])
	}
	cos := func(a, b map[string]float64) float64 {
		s := 0.0
		for w, x := range a {
			s += x * b[w]
		}
		return s
	}
	var c1, c10 int
	for i, p := range pairs {
		a := vec(p[0])
		own, rank := cos(a, defs[i]), 0
		for j, d := range defs {
			if j != i && cos(a, d) >= own {
				rank++
			}
		}
		if rank < 1 {
			c1++
		}
		if rank < 10 {
			c10++
		}
	}
	return float64(c1) / n, float64(c10) / n
}

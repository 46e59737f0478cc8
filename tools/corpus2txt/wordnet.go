package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// lexNames are WordNet's lexicographer files, indexed by the lex_filenum field
// of a data line (lexnames(5WN)).
var lexNames = []string{
	"adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal",
	"noun.artifact", "noun.attribute", "noun.body", "noun.cognition",
	"noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group",
	"noun.location", "noun.motive", "noun.object", "noun.person",
	"noun.phenomenon", "noun.plant", "noun.possession", "noun.process",
	"noun.quantity", "noun.relation", "noun.shape", "noun.state",
	"noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition",
	"verb.communication", "verb.competition", "verb.consumption", "verb.contact",
	"verb.creation", "verb.emotion", "verb.motion", "verb.perception",
	"verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl",
}

// parseWordNetLine reads one line of a WordNet data file (wndb(5WN):
// "offset lex_filenum ss_type w_cnt word lex_id ... | gloss") and returns the
// lexicographer file number and the synset's sentences: "word, word:
// definition." and then each quoted example. ok is false for the licence
// lines at the top of the file, which begin with two spaces.
func parseWordNetLine(s string) (lexFile int, sentences []string, ok bool, err error) {
	if strings.HasPrefix(s, "  ") || strings.TrimSpace(s) == "" {
		return 0, nil, false, nil
	}
	head, gloss, found := strings.Cut(s, " | ")
	if !found {
		return 0, nil, false, fmt.Errorf("no \" | \" before the gloss")
	}
	f := strings.Fields(head)
	if len(f) < 6 {
		return 0, nil, false, fmt.Errorf("too few fields before the gloss")
	}
	lexFile, err = strconv.Atoi(f[1])
	if err != nil || lexFile < 0 || lexFile >= len(lexNames) {
		return 0, nil, false, fmt.Errorf("bad lex_filenum %q", f[1])
	}
	n, err := strconv.ParseInt(f[3], 16, 0)
	if err != nil || n < 1 || len(f) < 4+2*int(n) {
		return 0, nil, false, fmt.Errorf("bad w_cnt %q", f[3])
	}
	words := make([]string, n)
	for i := range words {
		w := f[4+2*i]
		if k := strings.IndexByte(w, '('); k > 0 { // adjective markers: (a), (p), (ip)
			w = w[:k]
		}
		words[i] = strings.ReplaceAll(w, "_", " ")
	}
	var defs, examples []string
	for _, part := range strings.Split(gloss, ";") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
		case strings.HasPrefix(part, "\""):
			ex := strings.TrimSpace(part[1:])
			if k := strings.LastIndexByte(ex, '"'); k >= 0 {
				ex = ex[:k] // drops a trailing "- Author" too
			}
			if ex != "" {
				examples = append(examples, ex)
			}
		default:
			defs = append(defs, part)
		}
	}
	if len(defs) > 0 {
		def := strings.Join(defs, "; ")
		if !strings.HasSuffix(def, ".") {
			def += "."
		}
		sentences = append(sentences, strings.Join(words, ", ")+": "+def)
	}
	return lexFile, append(sentences, examples...), true, nil
}

// parseWordNet reads one data file and appends each synset's sentences to
// byLex[lex_filenum].
func parseWordNet(name string, r io.Reader, byLex [][]string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		lex, sents, ok, err := parseWordNetLine(sc.Text())
		if err != nil {
			return lineError(name, line, "%v", err)
		}
		if ok {
			byLex[lex] = append(byLex[lex], sents...)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// convertWordNet writes one document per lexicographer file from
// dir/data.{noun,verb,adj,adv}.
func convertWordNet(dir string, w *docWriter) error {
	byLex := make([][]string, len(lexNames))
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
		p := filepath.Join(dir, "data."+pos)
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		err = parseWordNet(p, f, byLex)
		f.Close()
		if err != nil {
			return err
		}
	}
	for _, sents := range byLex {
		if err := w.writeDoc(sents); err != nil {
			return err
		}
	}
	return nil
}

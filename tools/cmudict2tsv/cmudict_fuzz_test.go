package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse reads arbitrary bytes as a dictionary: parse must return an
// error or a lexicon, never panic; every line it counts must be accounted
// for; every kept word must use only allowed characters and every
// pronunciation only known phonemes, each once per word; and split and
// writeTSV must then write words<TAB>phonemes lines whose left side is
// the word's characters, one per space-separated token.
func FuzzParse(f *testing.F) {
	f.Add([]byte(testDict), false, "'")
	f.Add([]byte(testDict), true, "-.'")
	for _, s := range []string{
		"", "\n", "A", "A  ", "(1)  AH0", "A(  AH0", "A()  AH0", "A(1  AH0", "A)1(  AH0",
		"A  AH0 # x # y", "# A  AH0", ";;; A  AH0", "A  #", "a\r\nb  B\r\n", "\xff\xfe  AA1",
		"CAT  K AE1 T\nCAT  K AE0 T\nCAT(9)  K AE2 T", "\x00  AH0", "A  AH0\x00",
	} {
		f.Add([]byte(s), false, "'")
	}
	f.Fuzz(func(t *testing.T, data []byte, keepStress bool, extra string) {
		if checkExtra(extra) != nil {
			return
		}
		opts := options{keepStress: keepStress, extra: extra, test: 1, dev: 0.5, seed: 3}
		lex, err := parse(bytes.NewReader(data), opts)
		if err != nil {
			return
		}
		st := lex.st
		dropped := 0
		for _, n := range st.dropped {
			dropped += n
		}
		if st.lines != st.entries+st.comments+st.blank || st.entries != st.kept+st.duplicates+dropped {
			t.Fatalf("counts do not add up: %+v", st)
		}
		kept := 0
		for w, ps := range lex.prons {
			if w == "" || !utf8.ValidString(w) || wordProblem(w, func(r rune) bool { return r >= 'a' && r <= 'z' || strings.ContainsRune(extra, r) }) != "" {
				t.Fatalf("kept word %q", w)
			}
			seen := map[string]bool{}
			for _, p := range ps {
				if len(p) == 0 {
					t.Fatalf("%q: empty pronunciation", w)
				}
				for _, ph := range p {
					if _, ok := phoneme(ph, true); !ok || !keepStress && ph[len(ph)-1] <= '9' {
						t.Fatalf("%q: phoneme %q", w, ph)
					}
				}
				key := strings.Join(p, " ")
				if seen[key] {
					t.Fatalf("%q: %q twice", w, key)
				}
				seen[key] = true
				kept++
			}
		}
		if kept != st.kept {
			t.Fatalf("%d pronunciations kept, stats say %d", kept, st.kept)
		}
		_ = lex.summary(keepStress)
		train, dev, test, err := split(lex.words(), opts)
		if err != nil {
			return
		}
		for _, side := range [][]string{train, dev, test} {
			var b bytes.Buffer
			n, err := writeTSV(&b, side, lex)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(b.String(), "\n")
			if lines[len(lines)-1] != "" || len(lines)-1 != n {
				t.Fatalf("%d lines written, %d counted: %q", len(lines)-1, n, b.String())
			}
			for _, l := range lines[:n] {
				src, tgt, ok := strings.Cut(l, "\t")
				if !ok || strings.Contains(tgt, "\t") || len(lex.prons[strings.ReplaceAll(src, " ", "")]) == 0 || tgt == "" {
					t.Fatalf("line %q", l)
				}
				for _, c := range strings.Split(src, " ") {
					if utf8.RuneCountInString(c) != 1 {
						t.Fatalf("line %q: source token %q is not one character", l, c)
					}
				}
			}
		}
	})
}

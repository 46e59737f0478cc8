package main

import (
	"strings"
	"testing"
)

// FuzzParsers feeds every parser the same arbitrary input: each must return
// sentences or an error, never panic.
func FuzzParsers(f *testing.F) {
	for _, seed := range []string{brownSample, impSample, wordnetSample, fortuneSample,
		`{"year":1830,"text":"A. B."}`, "ca01 news\n", "$$$Gen 1:1\n<note>", "0 00 n 01 w 0 000 | \"", "x/ "} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		parseBrown("f", strings.NewReader(in))
		readBrownCategories("f", strings.NewReader(in), 5)
		parseImp("f", strings.NewReader(in), func(string, []string) error { return nil })
		parseWordNet("f", strings.NewReader(in), make([][]string, len(lexNames)))
		parseFortune("f", strings.NewReader(in))
		parseSOTU("f", strings.NewReader(in))
		splitSentences(in)
		stripOSIS(in)
	})
}

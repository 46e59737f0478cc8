package datasets

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseCoNLL reads arbitrary bytes as a CoNLL file: it must return
// sentences or an error, never panic, and the sentences must keep the
// promises RunTokens relies on (as many tags as words, none empty, valid
// UTF-8, no space, tab or newline inside a word).
func FuzzParseCoNLL(f *testing.F) {
	for _, s := range []string{
		"The at\ndog nn\n\nran vbd\n",
		"-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\n",
		"a x\nb c x\n",
		"a\n",
		"\n\n\r\n",
		"a\tb\r\nc\td\r\n",
		"\xff x\n",
	} {
		f.Add(s, uint8(0), uint8(0))
	}
	f.Fuzz(func(t *testing.T, in string, tokCol, tagCol uint8) {
		sents, err := ParseCoNLL("fuzz", strings.NewReader(in), CoNLLOptions{TokenColumn: int(tokCol % 5), TagColumn: int(tagCol % 5)})
		if err != nil {
			return
		}
		if len(sents) == 0 {
			t.Fatal("no sentences and no error")
		}
		for _, s := range sents {
			if len(s.Tokens) == 0 || len(s.Tokens) != len(s.Tags) {
				t.Fatalf("%d words, %d tags", len(s.Tokens), len(s.Tags))
			}
			for i, w := range s.Tokens {
				for _, x := range []string{w, s.Tags[i]} {
					if x == "" || !utf8.ValidString(x) || strings.ContainsAny(x, " \t\n") {
						t.Fatalf("bad field %q", x)
					}
				}
			}
		}
	})
}

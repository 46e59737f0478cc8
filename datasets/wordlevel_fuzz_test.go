package datasets

import (
	"context"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzWordLevel reads an arbitrary tokenizer.json with parseWordLevel and
// encodes an arbitrary text with it: neither may panic, every id must be
// below VocabSize and decode. With the tokenizer trained on
// wordLevelTrain, a text without "<" (so no special token) must decode to
// its white-space separated words, each unknown one as "<unk>".
func FuzzWordLevel(f *testing.F) {
	sample, err := TrainWordLevelTexts(context.Background(), wordLevelTrain, WordLevelOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sample.raw, "c a t")
	f.Add([]byte(wordLevelHFSaved), "a b <s>AH</s> z")
	f.Add([]byte(`{"model": {"type": "WordLevel", "vocab": {"a": 0, "a b": 1}, "unk_token": "x"}}`), "a b")
	f.Add([]byte(`{"added_tokens": [{"id": 2, "content": "ab", "single_word": true, "lstrip": true, "rstrip": true}],`+
		`"pre_tokenizer": {"type": "WhitespaceSplit"}, "model": {"type": "WordLevel", "vocab": {"a": 0, "<unk>": 1}, "unk_token": "<unk>"}}`), " ab a xab ")
	for _, c := range wordLevelCases {
		f.Add(sample.raw, c.text)
	}
	f.Fuzz(func(t *testing.T, raw []byte, text string) {
		if tok, ok, err := parseWordLevel(raw); err == nil && ok {
			checkWordLevel(t, tok, text)
		}
		ids := checkWordLevel(t, sample, text)
		if ids == nil || strings.Contains(text, "<") {
			return
		}
		words := strings.FieldsFunc(text, unicode.IsSpace)
		for i, w := range words {
			if _, ok := sample.vocab[w]; !ok {
				words[i] = "<unk>"
			}
		}
		if dec, _ := sample.Decode(ids); dec != strings.Join(words, " ") {
			t.Fatalf("%q decodes as %q, want %q", text, dec, strings.Join(words, " "))
		}
	})
}

// checkWordLevel encodes text and decodes the ids; it returns the ids, or
// nil when text cannot be encoded.
func checkWordLevel(t *testing.T, tok *WordLevel, text string) []int {
	ids, err := tok.Encode(text)
	if err != nil {
		if utf8.ValidString(text) && tok.unkID >= 0 {
			t.Fatalf("%q: %v", text, err)
		}
		return nil
	}
	for _, id := range ids {
		if id < 0 || id >= tok.VocabSize() {
			t.Fatalf("%q: id %d outside [0, %d)", text, id, tok.VocabSize())
		}
	}
	if _, err := tok.Decode(ids); err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	return ids
}

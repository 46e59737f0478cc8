package datasets

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWordPieceMatchesHuggingFace encodes with testdata/wordpiece_tiny.json,
// a hand-written BERT-style tokenizer.json (BertProcessing, a 12-character
// word limit), and compares with the ids, type ids and decodes that
// Hugging Face's tokenizers 0.23.2 (npm, node v20) gave for the same file:
//
//	tok.encode(text, null, {addSpecialTokens: false}) or tok.encode(a, b),
//	then getIds(), getTypeIds() and tok.decode(ids, false).
func TestWordPieceMatchesHuggingFace(t *testing.T) {
	tok, err := LoadTokenizer(filepath.Join("testdata", "wordpiece_tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	wp, ok := tok.(*WordPiece)
	if !ok {
		t.Fatalf("LoadTokenizer gave a %T, want *WordPiece", tok)
	}
	for _, c := range []struct {
		a, b      string
		pair      bool
		ids, typs []int
		dec       string
	}{
		{a: "The lights, unaffable!", ids: []int{5, 6, 7, 15, 8, 9, 10, 27}, dec: "the lights, unaffable!"},
		{a: "Café PRISM\u0000 rays\u200bx raying", ids: []int{22, 23, 24, 7, 31, 24, 26}, dec: "cafe prism raysx raying"},
		{a: "don't 中中x", ids: []int{19, 17, 18, 20, 20, 30}, dec: "don ' t 中 中 x"},
		{a: "xxxxxxxxxxxxx xxxxxxxxxxxx", ids: []int{1, 30, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31, 31}, dec: "[UNK] xxxxxxxxxxxx"},
		{a: "[CLS] the [MASK] İ ı", ids: []int{2, 5, 4, 13, 35}, dec: "[CLS] the [MASK] i ı"},
		{a: "“ray”—$5", ids: []int{32, 24, 33, 34, 21, 1}, dec: "“ ray ” — $ [UNK]"},
		{a: "the light", b: "is unaffable.", pair: true, ids: []int{2, 5, 6, 3, 29, 8, 9, 10, 16, 3},
			typs: []int{0, 0, 0, 0, 1, 1, 1, 1, 1, 1}, dec: "[CLS] the light [SEP] is unaffable. [SEP]"},
	} {
		var ids, typs []int
		var err error
		if c.pair {
			ids, typs, err = wp.EncodePair(c.a, c.b)
		} else {
			ids, err = wp.Encode(c.a)
			typs = make([]int, len(ids))
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.typs == nil {
			c.typs = make([]int, len(c.ids))
		}
		if !slices.Equal(ids, c.ids) || !slices.Equal(typs, c.typs) {
			t.Errorf("%q %q: ids %v types %v, Hugging Face %v %v", c.a, c.b, ids, typs, c.ids, c.typs)
		}
		dec, err := wp.Decode(ids)
		if err != nil || dec != c.dec {
			t.Errorf("decode %v = %q, %v; Hugging Face %q", ids, dec, err, c.dec)
		}
	}
	ids, typs, err := wp.EncodeWithSpecials("the light")
	if err != nil || !slices.Equal(ids, []int{2, 5, 6, 3}) || !slices.Equal(typs, []int{0, 0, 0, 0}) {
		t.Errorf("EncodeWithSpecials = %v %v %v", ids, typs, err)
	}
}

func TestWordPieceErrors(t *testing.T) {
	for _, s := range []string{
		`{"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"a":0}}}`,
		`{"model":{"type":"WordPiece","vocab":{"[UNK]":0,"a":-1}}}`,
		`{"model":{"type":"WordPiece","vocab":{"[UNK]":0,"a":0}}}`,
		`{"model":{"type":"WordPiece","vocab":{"[UNK]":0,"":1}}}`,
		`{"model":{"type":"WordPiece","vocab":{"[UNK]":0}},"post_processor":{"type":"BertProcessing","sep":["[SEP]",7],"cls":["[CLS]",0]}}`,
		`{"model":{"type":"WordPiece","vocab":{"[UNK]":0}},"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"[CLS]","type_id":0}}],"pair":[],"special_tokens":{}}}`,
		`{"model":{"type":"WordPiece","vocab":{"[UNK]":0},"max_input_chars_per_word":-1}}`,
		`{"model":{"type":"WordPiece"}}`,
	} {
		if _, err := parseTokenizer([]byte(s)); err == nil {
			t.Errorf("accepted %s", s)
		}
	}
}

func TestTrainWordPiece(t *testing.T) {
	texts := []string{"The prism refracts the light; the lights are refracted.", "Héllo, Wörld! 中文 prisms [MASK] refracting"}
	tok, err := TrainWordPieceTexts(context.Background(), texts, WordPieceOptions{VocabSize: 120, Lowercase: true, StripAccents: true})
	if err != nil {
		t.Fatal(err)
	}
	v := tok.Vocab()
	if !slices.Equal(v[:5], WordPieceSpecials) || len(v) > 120 {
		t.Fatalf("vocabulary %q", v)
	}
	dir := t.TempDir()
	js, vt := filepath.Join(dir, "tokenizer.json"), filepath.Join(dir, "vocab.txt")
	if err := tok.Save(js); err != nil {
		t.Fatal(err)
	}
	if err := tok.SaveVocab(vt); err != nil {
		t.Fatal(err)
	}
	fromJSON, err := LoadTokenizer(js)
	if err != nil {
		t.Fatal(err)
	}
	fromTxt, err := LoadWordPieceVocab(vt, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range append(texts, "unseen qz words") {
		a, err1 := fromJSON.Encode(text)
		b, err2 := fromTxt.Encode(text)
		if err1 != nil || err2 != nil || !slices.Equal(a, b) {
			t.Errorf("%q: json %v %v, vocab.txt %v %v", text, a, err1, b, err2)
		}
		dec, _ := fromJSON.Decode(a)
		if text == texts[0] && dec != "the prism refracts the light ; the lights are refracted." {
			t.Errorf("decode %q", dec)
		}
	}
	raw, _ := os.ReadFile(vt)
	if !strings.HasPrefix(string(raw), "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n") {
		t.Errorf("vocab.txt starts %q", raw[:40])
	}
}

// TestBertUnicodeTablesMatchHuggingFace checks characters on which Go's
// Unicode tables (15.0) and those behind tokenizers 0.23.2 disagree; the
// expected words are what tokenizers gave for "a" + c + "a" (and for c
// alone, for the normalizer), over every code point
// (tools/hftokenizers, case u).
func TestBertUnicodeTablesMatchHuggingFace(t *testing.T) {
	uncased := &WordPiece{norm: &bertNormalizer{cleanText: true, chinese: true, stripAccents: true, lowercase: true}, split: true}
	cased := &WordPiece{norm: &bertNormalizer{cleanText: true, chinese: true}, split: true}
	for _, c := range []struct {
		tok  *WordPiece
		text string
		want []string
	}{
		{cased, "a\u061Da", []string{"a\u061Da"}},             // Po since Unicode 14: not punctuation to tokenizers
		{cased, "a\u166Da", []string{"a", "\u166D", "a"}},     // So to Go, Po to tokenizers
		{cased, "a\u0890a", []string{"a\u0890a"}},             // Cf since Unicode 14: kept
		{cased, "a\u0378a", []string{"a\u0378a"}},             // unassigned: kept
		{cased, "a\ue000a", []string{"aa"}},                   // private use: removed
		{cased, "a\u00ada", []string{"aa"}},                   // soft hyphen (Cf): removed
		{uncased, "a\u07FDa", []string{"a\u07FDa"}},           // Mn since Unicode 11: not stripped
		{uncased, "a\u1734a", []string{"aa"}},                 // Mc to Go, Mn to tokenizers: stripped
		{uncased, "\uA7CB", []string{"\u0264"}},               // lowercase added in Unicode 16
		{uncased, "\U00011938", []string{"\U00011938"}},       // not decomposed
		{uncased, "İé", []string{"ie"}},                       // NFD, strip, lowercase
		{uncased, "x中y", []string{"x", "中", "y"}},             // CJK
		{uncased, "a$b¿c", []string{"a", "$", "b", "¿", "c"}}, // ASCII symbols and Unicode P are punctuation
		{uncased, "a©b\u2028c", []string{"a©b", "c"}},         // So is not; U+2028 is whitespace
	} {
		var got []string
		bertWords(c.tok.normalize(c.text), func(w string) { got = append(got, w) })
		if !slices.Equal(got, c.want) {
			t.Errorf("%+q: words %+q, tokenizers %+q", c.text, got, c.want)
		}
	}
}

// BenchmarkEncodeOpticksWordPiece encodes the whole of Opticks (≈0.6 MB)
// with WordPiece tokenizers of 4000 tokens trained on it by
// TrainWordPiece, uncased and cased. MB/s is input text per second.
func BenchmarkEncodeOpticksWordPiece(b *testing.B) {
	text := opticks(b)
	c, err := OpenCorpus(opticksPath(b), CorpusOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, o := range []struct {
		name string
		opts WordPieceOptions
	}{
		{"wordpiece-4000-uncased", WordPieceOptions{VocabSize: 4000, Lowercase: true, StripAccents: true}},
		{"wordpiece-4000-cased", WordPieceOptions{VocabSize: 4000}},
	} {
		tok, err := TrainWordPiece(context.Background(), c, o.opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(o.name, func(b *testing.B) { benchEncode(b, tok, text) })
	}
}

// A BERT tokenizer.json gives a pair of sentences as [CLS] A [SEP] B [SEP]
// with token type ids 0 for the first segment and 1 for the second.
func ExampleWordPiece_EncodePair() {
	tok, err := LoadTokenizer(filepath.Join("testdata", "wordpiece_tiny.json"))
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, types, err := tok.(*WordPiece).EncodePair("The light", "is unaffable.")
	if err != nil {
		fmt.Println(err)
		return
	}
	text, _ := tok.Decode(ids)
	fmt.Println(ids)
	fmt.Println(types)
	fmt.Println(text)
	// Output:
	// [2 5 6 3 29 8 9 10 16 3]
	// [0 0 0 0 1 1 1 1 1 1]
	// [CLS] the light [SEP] is unaffable. [SEP]
}

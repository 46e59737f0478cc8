package datasets

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// opticksSplit writes the first 90% of Opticks (cut at a line end) to a
// file and returns the corpus of it and the held-out rest.
func opticksSplit(t *testing.T) (*Corpus, string) {
	t.Helper()
	text := opticks(t)
	cut := strings.LastIndexByte(text[:len(text)*9/10], '\n') + 1
	return openText(t, text[:cut]), text[cut:]
}

func TestTrainBPEOpticks(t *testing.T) {
	c, heldOut := opticksSplit(t)
	tok, err := TrainBPE(c, 1024, []string{"<|endoftext|>"})
	require.NoError(t, err)
	assert.Equal(t, 1024, tok.VocabSize())

	ids, err := tok.Encode(heldOut)
	require.NoError(t, err)
	back, err := tok.Decode(ids)
	require.NoError(t, err)
	require.Equal(t, heldOut, back, "encode→decode round-trips held-out text exactly")
	// 1024 tokens compress English about 3× (measured 0.34 tokens per
	// byte); bytes alone would give 1.
	assert.Less(t, float64(len(ids))/float64(len(heldOut)), 0.4)

	// The special token is id 0 and is never split.
	ids, err = tok.Encode("light<|endoftext|>colour")
	require.NoError(t, err)
	assert.Contains(t, ids, 0)
	back, err = tok.Decode(ids)
	require.NoError(t, err)
	assert.Equal(t, "light<|endoftext|>colour", back)

	// Save → load gives the same file and the same ids.
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	require.NoError(t, tok.Save(path))
	loaded, err := LoadTokenizer(path)
	require.NoError(t, err)
	assert.Equal(t, tok.VocabSize(), loaded.VocabSize())
	want, err := tok.Encode(heldOut)
	require.NoError(t, err)
	got, err := loaded.Encode(heldOut)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	a, _ := tok.MarshalJSON()
	b, _ := loaded.MarshalJSON()
	assert.Equal(t, a, b)

	// The file is a Hugging Face tokenizer.json of a byte-level BPE.
	var f struct {
		AddedTokens []hfAddedToken `json:"added_tokens"`
		Model       struct {
			Type   string         `json:"type"`
			Vocab  map[string]int `json:"vocab"`
			Merges []string       `json:"merges"`
		} `json:"model"`
		PreTokenizer struct {
			Type string `json:"type"`
		} `json:"pre_tokenizer"`
	}
	require.NoError(t, json.Unmarshal(a, &f))
	assert.Equal(t, "BPE", f.Model.Type)
	assert.Equal(t, "ByteLevel", f.PreTokenizer.Type)
	assert.Len(t, f.Model.Vocab, 1024)
	assert.Len(t, f.Model.Merges, 1024-1-256)
	assert.Equal(t, 0, f.Model.Vocab["<|endoftext|>"])
	assert.Equal(t, []hfAddedToken{{ID: 0, Content: "<|endoftext|>", Special: true}}, f.AddedTokens)
	assert.Contains(t, string(a), `"<|endoftext|>"`, "not HTML-escaped")
}

// randomText is generated English-like text: n words from a small lexicon,
// so merges are well defined.
func randomText(seed uint64, n int) string {
	lex := strings.Fields("the light of rays colour prism glass red blue refraction is and in by which")
	r := rand.New(rand.NewPCG(seed, 1))
	var sb strings.Builder
	for i := range n {
		sb.WriteString(lex[r.IntN(len(lex))])
		if i%12 == 11 {
			sb.WriteString(".\n")
		} else {
			sb.WriteByte(' ')
		}
	}
	return sb.String()
}

func TestTrainBPEDeterministic(t *testing.T) {
	c := openText(t, randomText(1, 20000))
	a, err := TrainBPE(c, 300, nil)
	require.NoError(t, err)
	b, err := TrainBPE(c, 300, nil)
	require.NoError(t, err)
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	assert.Equal(t, string(ja), string(jb), "same corpus, same tokenizer")
}

func TestTrainBPEKnownMerges(t *testing.T) {
	// Pre-tokens: "ab" once, "Ġab" three times, "Ġcd" once. Pair counts:
	// (a,b) 4, (Ġ,a) 3, (Ġ,c) 1, (c,d) 1. First merge a+b; then (Ġ,ab) has
	// 3; every other pair occurs once, below minMergeCount, so training
	// stops at 256 + 2 tokens although 1000 were allowed.
	tok, err := TrainBPE(openText(t, "ab ab ab ab cd"), 1000, nil)
	require.NoError(t, err)
	assert.Equal(t, 258, tok.VocabSize())
	raw, _ := tok.MarshalJSON()
	var f struct {
		Model struct {
			Vocab  map[string]int `json:"vocab"`
			Merges []string       `json:"merges"`
		} `json:"model"`
	}
	require.NoError(t, json.Unmarshal(raw, &f))
	assert.Equal(t, []string{"a b", "Ġ ab"}, f.Model.Merges)
	assert.Equal(t, 256, f.Model.Vocab["ab"])
	assert.Equal(t, 257, f.Model.Vocab["Ġab"])
	ids, err := tok.Encode("ab ab cd")
	require.NoError(t, err)
	assert.Equal(t, []int{256, 257, f.Model.Vocab["Ġ"], f.Model.Vocab["c"], f.Model.Vocab["d"]}, ids)
}

func TestMergeWord(t *testing.T) {
	// "abab" merging (a,b)=X: tokenizers' Word::merge bookkeeping.
	const a, b, x = 1, 2, 9
	w, ch := mergeWord([]int{a, b, a, b}, a, b, x)
	assert.Equal(t, []int{x, x}, w)
	net := map[symPair]int{}
	for _, c := range ch {
		net[c.p] += c.n
	}
	// Before: (a,b)×2 (removed by the merge itself), (b,a)×1. After: (X,X)×1.
	assert.Equal(t, map[symPair]int{{b, a}: -1, {x, a}: 0, {x, x}: 1}, net)

	w, ch = mergeWord([]int{3, a, b, 4}, a, b, x)
	assert.Equal(t, []int{3, x, 4}, w)
	assert.ElementsMatch(t, []change{{symPair{3, a}, -1}, {symPair{3, x}, 1}, {symPair{b, 4}, -1}, {symPair{x, 4}, 1}}, ch)
}

func TestTrainBPEUnseenCharacters(t *testing.T) {
	tok, err := TrainBPE(openText(t, randomText(2, 3000)), 400, []string{"<|終|>"})
	require.NoError(t, err)
	for _, s := range []string{"日本語 café 🙂", "\t\r\n  two  spaces\x00", "", " leading and trailing ", "a<|終|>b"} {
		ids, err := tok.Encode(s)
		require.NoError(t, err, "%q", s)
		back, err := tok.Decode(ids)
		require.NoError(t, err)
		assert.Equal(t, s, back, "every byte has a token")
	}
	_, err = tok.Decode([]int{tok.VocabSize()})
	assert.ErrorContains(t, err, "not in the vocabulary")
	_, err = tok.Decode([]int{-1})
	assert.Error(t, err)
}

func TestTrainBPEErrors(t *testing.T) {
	c := openText(t, "some text\n")
	_, err := TrainBPE(c, 256, []string{"<s>"})
	assert.ErrorContains(t, err, "below 257")
	_, err = TrainBPE(c, 300, []string{"<s>", "<s>"})
	assert.ErrorContains(t, err, "repeated")
	_, err = TrainBPE(c, 300, []string{""})
	assert.ErrorContains(t, err, "empty")
}

func TestSplitSpecials(t *testing.T) {
	got := splitSpecials("a<s>b<s><pad>c<s>", []string{"<s>", "<pad>"})
	assert.Equal(t, []string{"a", "b", "c"}, got)
	assert.Nil(t, splitSpecials("<s>", []string{"<s>"}))
	assert.Equal(t, []string{"plain"}, splitSpecials("plain", nil))
}

// gpt2Style is a minimal tokenizer.json written the way Hugging Face
// tokenizers ≥ 0.20 saves GPT-2's: merges as pairs, empty prefix and
// suffix strings, a ByteLevel post-processor and an added special token.
const gpt2Style = `{
  "version": "1.0",
  "truncation": null,
  "padding": null,
  "added_tokens": [
    {"id": 0, "content": "<|endoftext|>", "single_word": false, "lstrip": false,
     "rstrip": false, "normalized": true, "special": true}
  ],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
  "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
  "model": {
    "type": "BPE", "dropout": null, "unk_token": null,
    "continuing_subword_prefix": "", "end_of_word_suffix": "",
    "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
    "vocab": {"<|endoftext|>": 0, "Ġ": 1, "d": 2, "e": 3, "h": 4, "l": 5, "o": 6, "r": 7, "w": 8,
              "he": 9, "ll": 10, "hell": 11, "hello": 12, "Ġw": 13, "or": 14, "Ġwor": 15},
    "merges": [["h", "e"], ["l", "l"], ["he", "ll"], ["hell", "o"], ["Ġ", "w"], ["o", "r"], ["Ġw", "or"]]
  }
}`

func TestLoadHFTokenizer(t *testing.T) {
	path := writeFile(t, t.TempDir(), "tokenizer.json", gpt2Style)
	tok, err := LoadTokenizer(path)
	require.NoError(t, err)
	assert.Equal(t, 16, tok.VocabSize())

	// "hello" merges h+e, l+l, he+ll, hell+o; "Ġworld" merges Ġ+w (rank 4)
	// before o+r (rank 5), then Ġw+or, leaving l and d.
	ids, err := tok.Encode("hello world")
	require.NoError(t, err)
	assert.Equal(t, []int{12, 15, 5, 2}, ids)
	text, err := tok.Decode(ids)
	require.NoError(t, err)
	assert.Equal(t, "hello world", text)

	ids, err = tok.Encode("hello<|endoftext|>")
	require.NoError(t, err)
	assert.Equal(t, []int{12, 0}, ids)
	text, err = tok.Decode([]int{0, 12, 0, 0, 15})
	require.NoError(t, err)
	assert.Equal(t, "<|endoftext|>hello<|endoftext|><|endoftext|> wor", text)

	// No unknown token and no byte for "x": an error, not sugarme's panic.
	_, err = tok.Encode("hex")
	assert.ErrorContains(t, err, "encode")

	// Saving writes the file back unchanged.
	out := filepath.Join(t.TempDir(), "copy.json")
	require.NoError(t, tok.Save(out))
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, gpt2Style, string(b))
}

func TestLoadHFWordPiece(t *testing.T) {
	// A BERT-style tokenizer.json: other model types load too. Its
	// truncation to 2 tokens is ignored: it would cut every corpus chunk.
	const bert = `{
  "version": "1.0", "padding": null,
  "truncation": {"direction": "Right", "max_length": 2, "strategy": "LongestFirst", "stride": 0},
  "added_tokens": [{"id": 0, "content": "[UNK]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
  "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": null,
  "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
  "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
            "vocab": {"[UNK]": 0, "hello": 1, "world": 2, "##s": 3}}
}`
	tok, err := LoadTokenizer(writeFile(t, t.TempDir(), "tokenizer.json", bert))
	require.NoError(t, err)
	ids, err := tok.Encode("Hello worlds zzz")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3, 0}, ids)
	text, err := tok.Decode([]int{1, 2, 3})
	require.NoError(t, err)
	assert.Equal(t, "hello worlds", text)
}

func TestLoadTokenizerErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"not json":       "{not json",
		"unknown format": `{"name": "x"}`,
		"vocab a number": `{"model": {"type": "BPE", "vocab": 3, "merges": []}}`,
		"merge unknown":  `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}`,
		"no model type":  `{"model": {"type": "Nope"}}`,
		"added id wrong": `{"added_tokens": [{"id": 7, "content": "<s>", "special": true}], "model": {"type": "BPE", "vocab": {"a": 0, "<s>": 1}, "merges": []}}`,
		"char version":   `{"type": "zoo-char", "version": 2, "chars": ["a"]}`,
		"char not char":  `{"type": "zoo-char", "version": 1, "chars": ["ab"]}`,
		"char twice":     `{"type": "zoo-char", "version": 1, "chars": ["a", "a"]}`,
		"char empty":     `{"type": "zoo-char", "version": 1, "chars": []}`,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			p := writeFile(t, dir, strings.ReplaceAll(name, " ", "_")+".json", content)
			_, err := LoadTokenizer(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "load tokenizer")
		})
	}
	_, err := LoadTokenizer(filepath.Join(dir, "missing.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func ExampleTrainBPE() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "corpus.txt")
	_ = os.WriteFile(path, []byte(strings.Repeat("the prism refracts the light\n", 50)), 0o644)
	c, err := OpenCorpus(path, CorpusOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	tok, err := TrainBPE(c, 300, []string{"<|endoftext|>"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, _ := tok.Encode("the light")
	text, _ := tok.Decode(ids)
	fmt.Println(tok.VocabSize(), len(ids), text)
	// Output: 278 2 the light
}

func TestEncodeFastMatchesSugarme(t *testing.T) {
	// Encode skips sugarme's Tokenizer for byte-level BPEs; sugarme's own
	// pipeline (with the byteLevel pre-tokenizer and our BPE model, as
	// other layouts run) must give the same ids.
	c, heldOut := opticksSplit(t)
	trained, err := TrainBPE(c, 800, nil)
	require.NoError(t, err)
	raw, err := trained.MarshalJSON()
	require.NoError(t, err)
	for _, variant := range []string{"plain", "add_prefix_space", "no regex"} {
		json := string(raw)
		switch variant {
		case "add_prefix_space":
			json = strings.Replace(json, `"add_prefix_space": false`, `"add_prefix_space": true`, 1)
		case "no regex":
			json = strings.Replace(json, `"use_regex": true`, `"use_regex": false`, 1)
		}
		tok, err := parseHF([]byte(json))
		require.NoError(t, err)
		require.True(t, tok.native)
		tk, err := tok.sugarme()
		require.NoError(t, err)
		texts := []string{heldOut[:20000], "  Light, \n\n\tis it's 42 日本"}
		if variant == "no regex" {
			texts[0] = heldOut[:300] // one piece: BPE merging is quadratic in its length
		}
		for _, text := range texts {
			fast, err := tok.Encode(text)
			require.NoError(t, err)
			en, err := tk.EncodeSingle(text, false)
			require.NoError(t, err)
			assert.Equal(t, en.Ids, fast, variant)
		}
	}
}

// dashes is a hand-written tokenizer.json whose merges make a run of
// dashes ambiguous: "- -" (rank 0) then "-- --" (rank 1). Hugging Face's
// tokenizers applies the lowest rank first and, among equal ranks, the
// leftmost pair: "-----" is "--" "-" "-" "-" (pos 0), then "--" "-" "--"
// (pos 2; pos 1 was merged away), then "----" "-". sugarme/tokenizer
// v0.3.0 gave "--" "-" "--" (it broke ties between equal ranks on a
// field it never sets). The vocabulary has no "---", so "-- -" is no
// merge. Checked with tokenizers 0.23.2 (npm), whose encode of "-----",
// "---", "--------" and "a-----b" gives the ids below.
const dashes = `{
  "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": null,
  "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
            "vocab": {"-": 0, "--": 1, "----": 2, "a": 3, "b": 4},
            "merges": ["- -", "-- --"]}
}`

func TestBPEMergeOrderMatchesHuggingFace(t *testing.T) {
	tok, err := parseTokenizer([]byte(dashes))
	require.NoError(t, err)
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"-----", []int{2, 0}},         // "----" "-", not "--" "-" "--" nor "-" "----"
		{"---", []int{1, 0}},           // "--" "-": the leftmost pair first
		{"--------", []int{2, 2}},      // "----" "----"
		{"-------", []int{2, 1, 0}},    // "----" "--" "-"
		{"a-----b", []int{3, 2, 0, 4}}, // pieces "a", "-----", "b"
	} {
		ids, err := tok.Encode(c.in)
		require.NoError(t, err)
		assert.Equal(t, c.want, ids, "%q", c.in)
		back, err := tok.Decode(ids)
		require.NoError(t, err)
		assert.Equal(t, c.in, back)
	}
}

// TestBPEModelOptionsMatchHuggingFace covers the BPE options zoo never
// writes but may load. The expected ids are tokenizers 0.23.2's (npm) for
// the same tokenizer.json files.
func TestBPEModelOptionsMatchHuggingFace(t *testing.T) {
	const model = `{"version": "1.0", "added_tokens": [], "normalizer": null, "pre_tokenizer": null, "decoder": null, "model": %s}`
	for _, c := range []struct {
		name, model string
		cases       map[string][]int
	}{{
		// unk_token with fuse_unk, and byte_fallback. tokenizers adds the
		// <0xXX> tokens of a character before an unknown token still
		// pending from the characters before it: "zzé" is <0xC3> <0xA9>
		// <unk>.
		"unk and byte_fallback",
		`{"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
		  "vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3, "<0x78>": 4, "<0xC3>": 5, "<0xA9>": 6}, "merges": ["a b"]}`,
		map[string][]int{"abxzzéab?": {3, 4, 5, 6, 0, 3, 0}, "zz": {0}, "éz": {5, 6, 0}, "zéz": {5, 6, 0}, "qa": {0, 1}},
	}, {
		// continuing_subword_prefix and end_of_word_suffix; unknown
		// characters not fused.
		"prefix and suffix",
		`{"type": "BPE", "unk_token": "<unk>", "continuing_subword_prefix": "##", "end_of_word_suffix": "</w>",
		  "vocab": {"<unk>": 0, "a": 1, "##a": 2, "##b": 3, "##b</w>": 4, "ab": 5, "aba": 6, "abab</w>": 7, "a</w>": 8, "##a</w>": 9},
		  "merges": ["a ##b", "ab ##a", "aba ##b</w>"]}`,
		map[string][]int{"abab": {7}, "a": {8}, "aba": {5, 9}, "ab": {1, 4}, "ba": {0, 9}, "abq": {5, 0}, "abb": {5, 4}, "qq": {0, 0}},
	}} {
		tok, err := parseTokenizer([]byte(fmt.Sprintf(model, c.model)))
		require.NoError(t, err, c.name)
		for in, want := range c.cases {
			ids, err := tok.Encode(in)
			require.NoError(t, err)
			assert.Equal(t, want, ids, "%s: %q", c.name, in)
		}
	}

	// A layout sugarme runs (a normalizer, another pre-tokenizer) still
	// merges with zoo's BPE.
	sugarme := strings.Replace(dashes, `"normalizer": null`, `"normalizer": {"type": "Lowercase"}`, 1)
	sugarme = strings.Replace(sugarme, `"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}`, `"pre_tokenizer": {"type": "Whitespace"}`, 1)
	tok, err := parseHF([]byte(sugarme))
	require.NoError(t, err)
	require.False(t, tok.native)
	for in, want := range map[string][]int{"-----": {2, 0}, "a-----B": {3, 2, 0, 4}, "A --- -----b": {3, 1, 0, 2, 0, 4}} {
		ids, err := tok.Encode(in)
		require.NoError(t, err)
		assert.Equal(t, want, ids, "%q", in)
	}
}

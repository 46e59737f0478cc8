package datasets

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wordLevelTrain is a few lines of tools/cmudict2tsv's output, both
// columns, as a seq2seq pipeline trains its joint tokenizer on them.
var wordLevelTrain = []string{
	"c a t", "K AE T",
	"c a t ' s", "K AE T S",
	"e i t h e r", "IY DH ER",
	"e i t h e r", "AY DH ER",
	"t o m a t o", "T AH M EY T OW",
	"t o m a t o", "T AH M AA T OW",
	"r e c o r d", "R EH K ER D",
	"r e c o r d", "R IH K AO R D",
}

// wordLevelVocab is the vocabulary TrainWordLevelTexts makes of
// wordLevelTrain, counted by hand: the specials, then by count (t 8; T, e,
// o, r 6; K, a, c 4; ER, R 3; AE, AH, D, DH, M, OW, d, h, i, m 2; the rest
// 1), words of equal count in byte order (upper case before lower).
var wordLevelVocab = []string{
	"<pad>", "<s>", "</s>", "<mask>", "<unk>",
	"t",
	"T", "e", "o", "r",
	"K", "a", "c",
	"ER", "R",
	"AE", "AH", "D", "DH", "M", "OW", "d", "h", "i", "m",
	"'", "AA", "AO", "AY", "EH", "EY", "IH", "IY", "S", "s",
}

// wordLevelCases are texts with the ids and decodes that Hugging Face's
// tokenizers 0.23.2 (npm, node v20.20.2) gives with the tokenizer trained
// on wordLevelTrain: tools/hftokenizers/wordlevel.js on the request that
// TestWordLevelDumpForHuggingFace writes (0 texts or decodes differ, and
// tokenizers writes the tokenizer.json back byte for byte). They cover unknown characters
// and phonemes, special tokens written in the text (alone and glued to
// words), runs of white space of several kinds (tab, newline, U+00A0,
// U+2003, U+0085; U+200B is not white space) and the empty text.
var wordLevelCases = []struct {
	text string
	ids  []int
	dec  string
	unk  int // words mapped to <unk> (not "<unk>" written in the text)
}{
	{"c a t", []int{12, 11, 5}, "c a t", 0},
	{"T AH M EY T OW", []int{6, 16, 19, 30, 6, 20}, "T AH M EY T OW", 0},
	{"z e b r a", []int{4, 7, 4, 9, 11}, "<unk> e <unk> r a", 2},
	{"K AE T\tS", []int{10, 15, 6, 33}, "K AE T S", 0},
	{"ZH IY", []int{4, 32}, "<unk> IY", 1},
	{"  t o  m\n", []int{5, 8, 24}, "t o m", 0},
	{"<s> c a t </s>", []int{1, 12, 11, 5, 2}, "<s> c a t </s>", 0},
	{"c<s>a", []int{12, 1, 11}, "c <s> a", 0},
	{"<unk> q", []int{4, 4}, "<unk> <unk>", 1},
	{"", []int{}, "", 0},
	{"a\u00a0c\u2003e\u200bh\u0085i", []int{11, 12, 4, 23}, "a c <unk> i", 1},
	{"É t é", []int{4, 5, 4}, "<unk> t <unk>", 2},
	{"<pad><mask></s>", []int{0, 3, 2}, "<pad> <mask> </s>", 0},
	{"AE<unk>T", []int{15, 4, 6}, "AE <unk> T", 0},
	{"cat", []int{4}, "<unk>", 1},
}

func trainWordLevelSample(t *testing.T) *WordLevel {
	t.Helper()
	tok, err := TrainWordLevelTexts(context.Background(), wordLevelTrain, WordLevelOptions{})
	require.NoError(t, err)
	return tok
}

func TestTrainWordLevel(t *testing.T) {
	tok := trainWordLevelSample(t)
	assert.Equal(t, wordLevelVocab, tok.Vocab())
	assert.Equal(t, len(wordLevelVocab), tok.VocabSize())

	// The order of the texts does not matter.
	rev := slices.Clone(wordLevelTrain)
	slices.Reverse(rev)
	tok2, err := TrainWordLevelTexts(context.Background(), rev, WordLevelOptions{})
	require.NoError(t, err)
	assert.Equal(t, tok.raw, tok2.raw)

	// A minimum count of 4 keeps t T e o r K a c (the "<s>" written four
	// times is not counted as a word); other specials and unknown token.
	tok, err = TrainWordLevelTexts(context.Background(), append(slices.Clone(wordLevelTrain), "<s> <s> <s> <s> <unk>"),
		WordLevelOptions{MinCount: 4})
	require.NoError(t, err)
	assert.Equal(t, []string{"<pad>", "<s>", "</s>", "<mask>", "<unk>", "t", "T", "e", "o", "r", "K", "a", "c"}, tok.Vocab())
	tok, err = TrainWordLevelTexts(context.Background(), []string{"b a a"}, WordLevelOptions{Specials: []string{"[UNK]", "[PAD]"}, Unknown: "[UNK]"})
	require.NoError(t, err)
	assert.Equal(t, []string{"[UNK]", "[PAD]", "a", "b"}, tok.Vocab())
	ids, err := tok.Encode("a c [PAD]")
	require.NoError(t, err)
	assert.Equal(t, []int{2, 0, 1}, ids)

	for _, c := range []struct {
		opts WordLevelOptions
		msg  string
	}{
		{WordLevelOptions{Specials: []string{"<pad>", ""}}, `special token 1 ("") is empty or repeated`},
		{WordLevelOptions{Specials: []string{"<unk>", "<unk>"}}, `special token 1 ("<unk>") is empty or repeated`},
		{WordLevelOptions{Specials: []string{"<pad>"}}, `the unknown token "<unk>" is not one of the special tokens ["<pad>"]`},
		{WordLevelOptions{Specials: []string{}}, `the unknown token "<unk>" is not one of the special tokens []`},
		{WordLevelOptions{MinCount: -1}, "minimum count -1 is negative"},
	} {
		_, err := TrainWordLevelTexts(context.Background(), wordLevelTrain, c.opts)
		assert.EqualError(t, err, "datasets: train word-level tokenizer: "+c.msg)
	}
	_, err = TrainWordLevelTexts(context.Background(), []string{"a", "\xff"}, WordLevelOptions{})
	assert.EqualError(t, err, "datasets: train word-level tokenizer: a text is not valid UTF-8")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = TrainWordLevelTexts(ctx, wordLevelTrain, WordLevelOptions{})
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)

	// No texts: the specials alone.
	tok, err = TrainWordLevelTexts(context.Background(), nil, WordLevelOptions{})
	require.NoError(t, err)
	assert.Equal(t, WordLevelSpecials, tok.Vocab())
}

// TestWordLevelMatchesHuggingFace encodes and decodes wordLevelCases with
// the tokenizer trained on wordLevelTrain, and through LoadTokenizer's
// file, and compares with Hugging Face's ids and decodes.
func TestWordLevelMatchesHuggingFace(t *testing.T) {
	tok := trainWordLevelSample(t)
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	require.NoError(t, tok.Save(path))
	loaded, err := LoadWordLevel(path)
	require.NoError(t, err)
	for _, w := range []*WordLevel{tok, loaded} {
		before := w.Unknown()
		unknown := 0
		for _, c := range wordLevelCases {
			ids, err := w.Encode(c.text)
			require.NoError(t, err, "%q", c.text)
			assert.Equal(t, c.ids, ids, "%q", c.text)
			dec, err := w.Decode(ids)
			require.NoError(t, err)
			assert.Equal(t, c.dec, dec, "%q", c.text)
			unknown += c.unk
		}
		assert.Equal(t, 8, unknown)
		assert.Equal(t, unknown, w.Unknown()-before, "words mapped to <unk>")
	}
}

// wordLevelHFSaved is what tokenizers 0.23.2 saves (Tokenizer.save, pretty)
// for a WordLevel model of the vocabulary below with unk_token <unk>, a
// WhitespaceSplit pre-tokenizer and addSpecialTokens of the first five:
// marshalWordLevel must write the same bytes (and a final newline).
const wordLevelHFSaved = `{
  "version": "1.0",
  "truncation": null,
  "padding": null,
  "added_tokens": [
    {
      "id": 0,
      "content": "<pad>",
      "single_word": false,
      "lstrip": false,
      "rstrip": false,
      "normalized": false,
      "special": true
    },
    {
      "id": 1,
      "content": "<s>",
      "single_word": false,
      "lstrip": false,
      "rstrip": false,
      "normalized": false,
      "special": true
    },
    {
      "id": 2,
      "content": "</s>",
      "single_word": false,
      "lstrip": false,
      "rstrip": false,
      "normalized": false,
      "special": true
    },
    {
      "id": 3,
      "content": "<mask>",
      "single_word": false,
      "lstrip": false,
      "rstrip": false,
      "normalized": false,
      "special": true
    },
    {
      "id": 4,
      "content": "<unk>",
      "single_word": false,
      "lstrip": false,
      "rstrip": false,
      "normalized": false,
      "special": true
    }
  ],
  "normalizer": null,
  "pre_tokenizer": {
    "type": "WhitespaceSplit"
  },
  "post_processor": null,
  "decoder": null,
  "model": {
    "type": "WordLevel",
    "vocab": {
      "<pad>": 0,
      "<s>": 1,
      "</s>": 2,
      "<mask>": 3,
      "<unk>": 4,
      "a": 5,
      "b": 6,
      "AH": 7
    },
    "unk_token": "<unk>"
  }
}`

func TestWordLevelFileMatchesHuggingFace(t *testing.T) {
	raw, err := marshalWordLevel([]string{"<pad>", "<s>", "</s>", "<mask>", "<unk>", "a", "b", "AH"}, 5, "<unk>")
	require.NoError(t, err)
	assert.Equal(t, wordLevelHFSaved+"\n", string(raw))
}

func TestWordLevelLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	// Hugging Face's own file loads as a WordLevel, through LoadTokenizer
	// too once it dispatches WordLevel models here.
	hf := write("hf.json", wordLevelHFSaved)
	tok, err := LoadWordLevel(hf)
	require.NoError(t, err)
	ids, err := tok.Encode("a b  AH c")
	require.NoError(t, err)
	assert.Equal(t, []int{5, 6, 7, 4}, ids)
	assert.Equal(t, 8, tok.VocabSize())
	raw, err := tok.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, wordLevelHFSaved, string(raw), "a loaded file is written back as it was")

	// No pre-tokenizer: the text between added tokens is one word (as
	// tokenizers 0.23.2: "a b" → 1, " a b" → 2).
	noPre := `{"added_tokens": [{"id": 3, "content": "<s>", "special": true}], "normalizer": null, "pre_tokenizer": null, "decoder": null,
		"model": {"type": "WordLevel", "vocab": {"a": 0, "a b": 1, "<unk>": 2}, "unk_token": "<unk>"}}`
	tok, err = LoadWordLevel(write("nopre.json", noPre))
	require.NoError(t, err)
	for text, want := range map[string][]int{"a b": {1}, "a": {0}, " a b": {2}, "a b<s>a": {1, 3, 0}} {
		ids, err := tok.Encode(text)
		require.NoError(t, err)
		assert.Equal(t, want, ids, "%q", text)
	}
	assert.Equal(t, 4, tok.VocabSize())

	// No unknown token in the vocabulary: an unknown word is an error (as
	// tokenizers: "WordLevel error: Missing [UNK] token from the vocabulary").
	tok, err = LoadWordLevel(write("nounk.json", `{"pre_tokenizer": {"type": "WhitespaceSplit"}, "model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "<unk>"}}`))
	require.NoError(t, err)
	_, err = tok.Encode("a b")
	assert.EqualError(t, err, `datasets: encode: "b" is not in the vocabulary, and neither is the unknown token "<unk>"`)
	_, err = tok.Decode([]int{0, 1})
	assert.EqualError(t, err, "datasets: decode: id 1 at position 1 is not in the vocabulary")
	_, err = tok.Encode("a \xff")
	assert.EqualError(t, err, "datasets: encode: text is not valid UTF-8")

	for _, c := range []struct{ content, msg string }{
		{`{"model": {"type": "BPE", "vocab": {}, "merges": []}}`, `model type "BPE" is not WordLevel`},
		{`{"model": {"type": "WordPiece", "vocab": {"a": 0}}}`, `model type "WordPiece" is not WordLevel`},
		{`{"version": "1.0"}`, `model type "" is not WordLevel`},
		{`{"model": {"type": "WordLevel", "unk_token": "<unk>"}}`, `a WordLevel model needs "vocab"`},
		{`{"model": {"type": "WordLevel", "vocab": {"a": 0}}}`, `a WordLevel model needs "unk_token"`},
		{`{"model": {"type": "WordLevel", "vocab": {"a": 0, "b": 0}, "unk_token": "a"}}`, `model: tokens "a" and "b" share id 0`},
		{`{"model": {"type": "WordLevel", "vocab": {"a": -1}, "unk_token": "a"}}`, `model: token "a" has id -1`},
		{`{"model": {"type": "WordLevel", "vocab": {"a": 2000000000}, "unk_token": "a"}}`, `model: token "a" has id 2000000000`},
		{`{"model": {"type": "WordLevel", "vocab": {}, "unk_token": "a"}}`, `empty vocabulary`},
		{`{"added_tokens": [{"id": 0, "content": "b"}], "model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}}`, `added token "b" has id 0, which the model gives to "a"`},
		{`{"added_tokens": [{"id": 99999, "content": "b"}], "model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}}`, `added token "b" has id 99999`},
		{`{"normalizer": {"type": "Lowercase"}, "model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}}`, "a word-level tokenizer has no normalizer or decoder and a WhitespaceSplit pre-tokenizer or none; this one has a normalizer"},
		{`{"pre_tokenizer": {"type": "Whitespace"}, "model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}}`, "this one has a pre-tokenizer other than WhitespaceSplit"},
		{`{"decoder": {"type": "Fuse"}, "model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}}`, "this one has a decoder"},
		{`[1, 2]`, "json: cannot unmarshal array into Go value of type datasets.wordLevelJSON"},
	} {
		p := write("bad.json", c.content)
		_, err := LoadWordLevel(p)
		if assert.Error(t, err, c.content) {
			assert.True(t, strings.HasPrefix(err.Error(), "datasets: load tokenizer "+p+": "), err.Error())
			assert.Contains(t, err.Error(), c.msg)
		}
	}
	_, err = LoadWordLevel(filepath.Join(dir, "missing.json"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "%v", err)

	// parseWordLevel leaves layouts it does not run to the caller.
	_, ok, err := parseWordLevel([]byte(`{"pre_tokenizer": {"type": "Whitespace"}, "model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}}`))
	assert.NoError(t, err)
	assert.False(t, ok)
}

// TestWordLevelDumpForHuggingFace writes the request that
// tools/hftokenizers/wordlevel.js checks against Hugging Face's
// tokenizers, when ZOO_WORDLEVEL_DUMP names a directory (see that file);
// otherwise it is skipped.
func TestWordLevelDumpForHuggingFace(t *testing.T) {
	dir := os.Getenv("ZOO_WORDLEVEL_DUMP")
	if dir == "" {
		t.Skip("ZOO_WORDLEVEL_DUMP is not set")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	trainTexts := wordLevelTrain
	var texts []string
	for _, c := range wordLevelCases {
		texts = append(texts, c.text)
	}
	if train := os.Getenv("ZOO_WORDLEVEL_TRAIN"); train != "" {
		trainTexts = readTSVColumns(t, train)
		for _, f := range strings.Split(os.Getenv("ZOO_WORDLEVEL_TEXTS"), ",") {
			if f != "" {
				texts = append(texts, readTSVColumns(t, f)...)
			}
		}
		// Every Unicode scalar value between two words of the vocabulary,
		// in chunks: white space splits them, anything else makes an
		// unknown word.
		var b strings.Builder
		for r := rune(0); r <= utf8.MaxRune; r++ {
			if !utf8.ValidRune(r) {
				continue
			}
			b.WriteString("a")
			b.WriteRune(r)
			b.WriteString("a ")
			if b.Len() > 1<<16 {
				texts = append(texts, b.String())
				b.Reset()
			}
		}
		texts = append(texts, b.String())
	}
	tok, err := TrainWordLevelTexts(context.Background(), trainTexts, WordLevelOptions{})
	require.NoError(t, err)
	tokPath := filepath.Join(dir, "tokenizer.json")
	require.NoError(t, tok.Save(tokPath))
	req := struct {
		Tokenizer string   `json:"tokenizer"`
		Texts     []string `json:"texts"`
		IDs       [][]int  `json:"ids"`
		Decode    [][]int  `json:"decode"`
		Decoded   []string `json:"decoded"`
	}{Tokenizer: tokPath, Texts: texts}
	for _, text := range texts {
		ids, err := tok.Encode(text)
		require.NoError(t, err)
		dec, err := tok.Decode(ids)
		require.NoError(t, err)
		req.IDs = append(req.IDs, ids)
		req.Decode = append(req.Decode, ids)
		req.Decoded = append(req.Decoded, dec)
	}
	raw, err := json.Marshal(req)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "request.json"), raw, 0o644))
	t.Logf("wrote %s: %d texts, %d tokens", filepath.Join(dir, "request.json"), len(texts), tok.VocabSize())
}

// readTSVColumns returns both columns of every line of a TSV file.
func readTSVColumns(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		src, tgt, _ := strings.Cut(sc.Text(), "\t")
		out = append(out, src, tgt)
	}
	require.NoError(t, sc.Err())
	return out
}

package datasets

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// llamaHF is testdata/llama_bpe_hf.json: tokenizers' (npm) ids and
// decodes for testdata/llama_bpe.json under four layouts, written by
// tools/hftokenizers/llama.js.
type llamaHF struct {
	Tokenizers string `json:"tokenizers"`
	Variants   []struct {
		Name  string                     `json:"name"`
		Patch map[string]json.RawMessage `json:"patch"`
		Texts []struct {
			Text       string `json:"text"`
			IDs        []int  `json:"ids"`
			IDsSpecial []int  `json:"ids_special"`
			Decoded    string `json:"decoded"`
		} `json:"texts"`
		Pair struct {
			A       string `json:"a"`
			B       string `json:"b"`
			IDs     []int  `json:"ids"`
			TypeIDs []int  `json:"type_ids"`
		} `json:"pair"`
		Opticks struct {
			Bytes     int    `json:"bytes"`
			IDs       int    `json:"ids"`
			SHA256    string `json:"sha256"`
			Head      []int  `json:"head"`
			RoundTrip bool   `json:"round_trip"`
		} `json:"opticks"`
		Decodes []llamaDecode `json:"decodes"`
	} `json:"variants"`
	// Added holds two more added tokens and their ids on the first
	// layout.
	Added struct {
		Tokens []hfAddedToken `json:"tokens"`
		Texts  []struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		} `json:"texts"`
		Decodes []llamaDecode `json:"decodes"`
	} `json:"added"`
}

type llamaDecode struct {
	IDs  []int  `json:"ids"`
	Text string `json:"text"`
}

// readLlamaHF reads testdata/llama_bpe_hf.json.
func readLlamaHF(t *testing.T) llamaHF {
	t.Helper()
	raw, err := os.ReadFile("testdata/llama_bpe_hf.json")
	require.NoError(t, err)
	var hf llamaHF
	require.NoError(t, json.Unmarshal(raw, &hf))
	return hf
}

// llamaFile returns testdata/llama_bpe.json with the top-level keys of
// patch replaced.
func llamaFile(t testing.TB, patch map[string]json.RawMessage) []byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/llama_bpe.json")
	require.NoError(t, err)
	if len(patch) == 0 {
		return raw
	}
	var f map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &f))
	for k, v := range patch {
		f[k] = v
	}
	out, err := json.Marshal(f)
	require.NoError(t, err)
	return out
}

// idsHash is llama.js's sha256 of the ids joined by commas.
func idsHash(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	h := sha256.Sum256([]byte(strings.Join(s, ",")))
	return hex.EncodeToString(h[:])
}

// TestLlamaBPEMatchesHuggingFace checks a Llama-2-style tokenizer
// (byte-fallback BPE trained by tokenizers' own BpeTrainer on Opticks)
// id for id against tokenizers 0.23.2: texts with tabs, emoji, CJK,
// special tokens and random Unicode, with and without the template's
// <s>, a pair, decodes of random ids (byte tokens that are invalid
// UTF-8 included), and all of Opticks as one text (by the hash of its
// ids).
func TestLlamaBPEMatchesHuggingFace(t *testing.T) {
	hf := readLlamaHF(t)
	require.Len(t, hf.Variants, 4)
	for _, v := range hf.Variants {
		t.Run(v.Name, func(t *testing.T) {
			tok, err := parseTokenizer(llamaFile(t, v.Patch))
			require.NoError(t, err)
			h, ok := tok.(*hfTemplated)
			require.True(t, ok, "a TemplateProcessing makes a PairEncoder, got %T", tok)
			require.True(t, h.native)
			for _, c := range v.Texts {
				ids, err := tok.Encode(c.Text)
				require.NoError(t, err)
				assert.Equal(t, c.IDs, ids, "encode %q", c.Text)
				withSpecials, types, err := h.EncodeWithSpecials(c.Text)
				require.NoError(t, err)
				assert.Equal(t, c.IDsSpecial, withSpecials, "encode with <s> %q", c.Text)
				assert.Equal(t, make([]int, len(withSpecials)), types)
				text, err := tok.Decode(c.IDs)
				require.NoError(t, err)
				assert.Equal(t, c.Decoded, text, "decode %v", c.IDs)
			}
			ids, types, err := h.EncodePair(v.Pair.A, v.Pair.B)
			require.NoError(t, err)
			assert.Equal(t, v.Pair.IDs, ids)
			assert.Equal(t, v.Pair.TypeIDs, types)
			for _, c := range v.Decodes {
				text, err := tok.Decode(c.IDs)
				require.NoError(t, err)
				assert.Equal(t, c.Text, text, "decode %v", c.IDs)
			}

			text := opticks(t)
			require.Equal(t, v.Opticks.Bytes, len(text))
			ids, err = tok.Encode(text)
			require.NoError(t, err)
			assert.Equal(t, v.Opticks.IDs, len(ids))
			assert.Equal(t, v.Opticks.Head, ids[:len(v.Opticks.Head)])
			assert.Equal(t, v.Opticks.SHA256, idsHash(ids), "the ids of Opticks differ from tokenizers'")
			back, err := tok.Decode(ids)
			require.NoError(t, err)
			assert.Equal(t, v.Opticks.RoundTrip, back == text)
		})
	}
}

// TestLlamaBPERoundTrip checks decode(encode(x)) == x for the Llama 2
// layout, whose normalizer and decoder undo each other, on texts with
// tabs, emoji, CJK, characters outside the vocabulary (byte fallback)
// and the special tokens written out; and that a byte token sequence
// that is not UTF-8 decodes to one U+FFFD per byte, as tokenizers'
// ByteFallback does. Text that is not UTF-8 cannot be encoded.
func TestLlamaBPERoundTrip(t *testing.T) {
	tok, err := parseTokenizer(llamaFile(t, nil))
	require.NoError(t, err)
	texts := []string{
		"Hello world", "\tindented\ttabs\t\t", " leading and trailing space ", "a  b   c",
		"emoji 😀🎉👍🏽🇫🇷 mixed", "日本語 中文 한국어 ไทย", "ǅ ﬁ Å e\u0301 \u200d \U0010FFFD",
		"</s><unk>", "line\r\nbreaks\n\n", strings.Repeat("x", 5000), randomText(3, 2000),
	}
	if text := opticks(t); text != "" {
		texts = append(texts, text[:100000])
	}
	for _, text := range texts {
		ids, err := tok.Encode(text)
		require.NoError(t, err)
		back, err := tok.Decode(ids)
		require.NoError(t, err)
		if back != text {
			t.Errorf("round trip of %.60q gives %.60q", text, back)
		}
	}
	b := func(x byte) int { return 3 + int(x) }
	for _, c := range []struct {
		ids  []int
		want string
	}{
		{[]int{b(0xE6), b(0x97), b(0xA5)}, "日"},
		{[]int{b(0xE6), b(0x97)}, "\uFFFD\uFFFD"},       // cut short
		{[]int{b(0xFF), b(0x41)}, "\uFFFD\uFFFD"},       // one bad byte spoils its run
		{[]int{b(0xC3), 1, b(0xA9)}, "\uFFFD<s>\uFFFD"}, // a token between breaks the run
	} {
		text, err := tok.Decode(c.ids)
		require.NoError(t, err)
		assert.Equal(t, c.want, text, "%v", c.ids)
	}
	_, err = tok.Encode("bad \xff byte")
	assert.ErrorContains(t, err, "not valid UTF-8")
}

// TestHFPipelineRefusals checks that parts not implemented are named,
// and that a BPE file mixing them with parts run here is refused rather
// than handed to sugarme.
func TestHFPipelineRefusals(t *testing.T) {
	for _, c := range []struct {
		name  string
		patch map[string]string
		want  string
	}{
		{"Lowercase with Prepend", map[string]string{"normalizer": `{"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Lowercase"}]}`}, `normalizer "Lowercase" is not implemented`},
		{"regex Replace", map[string]string{"normalizer": `{"type": "Replace", "pattern": {"Regex": " +"}, "content": "▁"}`}, `normalizer "Replace" with a "Regex" pattern is not implemented`},
		{"Whitespace pre-tokenizer", map[string]string{"pre_tokenizer": `{"type": "Whitespace"}`}, `pre_tokenizer "Whitespace" is not implemented`},
		{"CTC decoder", map[string]string{"decoder": `{"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "CTC"}]}`}, `decoder "CTC" is not implemented`},
		{"Metaspace with add_prefix_space false", map[string]string{"normalizer": "null", "pre_tokenizer": `{"type": "Metaspace", "replacement": "▁", "add_prefix_space": false}`}, "add_prefix_space false does not match prepend_scheme"},
		{"bad prepend_scheme", map[string]string{"normalizer": "null", "pre_tokenizer": `{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "sometimes"}`}, `prepend_scheme "sometimes"`},
		{"Strip without stop", map[string]string{"decoder": `{"type": "Strip", "content": " ", "start": 1}`}, `decoder "Strip" needs`},
		{"two templates", map[string]string{"post_processor": `{"type": "Sequence", "processors": [
			{"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {}},
			{"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {}}]}`}, "two templates"},
		{"template id unknown", map[string]string{"post_processor": `{"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<x>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {"<x>": {"id": "<x>", "ids": [99999], "tokens": ["<x>"]}}}`}, "special token id 99999"},
	} {
		t.Run(c.name, func(t *testing.T) {
			patch := map[string]json.RawMessage{}
			for k, v := range c.patch {
				patch[k] = json.RawMessage(v)
			}
			_, err := parseTokenizer(llamaFile(t, patch))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// TestHFPipelineParts checks the parts run here on small cases worked out
// from tokenizers' Rust sources.
func TestHFPipelineParts(t *testing.T) {
	m := &metaspace{repl: "▁", split: true}
	var words []string
	require.NoError(t, m.words("a  b c ", true, func(w string) error { words = append(words, w); return nil }))
	assert.Equal(t, []string{"▁a", "▁", "▁b", "▁c", "▁"}, words)
	for in, want := range map[string][]string{"a b": {"a", "▁b"}, "a": {"a"}, "": nil, "  ": {"▁", "▁"}} {
		words = nil
		m := &metaspace{repl: "▁", split: true, scheme: prependNever}
		require.NoError(t, m.words(in, true, func(w string) error { words = append(words, w); return nil }))
		assert.Equal(t, want, words, "%q", in)
	}
	for _, c := range []struct {
		scheme int
		first  bool
		in     string
		want   string
	}{
		{prependAlways, false, "a b", "▁a▁b"},
		{prependFirst, true, "a b", "▁a▁b"},
		{prependFirst, false, "a b", "a▁b"},
		{prependNever, true, "a b", "a▁b"},
		{prependAlways, true, " a", "▁a"}, // already starts with ▁
		{prependAlways, true, "", ""},     // nothing to prepend to
	} {
		m := &metaspace{repl: "▁", scheme: c.scheme}
		var got string
		require.NoError(t, m.words(c.in, c.first, func(w string) error { got += w; return nil }))
		assert.Equal(t, c.want, got, "%+v", c)
	}
	assert.Equal(t, []string{"ab", "▁ c", ""}, decodeChain([]decStep{{kind: decStepStrip, text: "▁", start: 2, stop: 1}}, []string{"▁▁ab▁", "▁▁▁ c", "▁"}))
	assert.Equal(t, []string{"ab", " c d"}, decodeChain([]decStep{{kind: decStepMetaspace, meta: &metaspace{repl: "▁"}}}, []string{"▁a▁b", "▁c▁d"}))
	assert.Equal(t, []string{" a b", " c d"}, decodeChain([]decStep{{kind: decStepMetaspace, meta: &metaspace{repl: "▁", scheme: prependNever}}}, []string{"▁a▁b", "▁c▁d"}))
	assert.Equal(t, []string{"x", "é", "<0xZZ>", "\uFFFD", "\uFFFD", "-", "\n"},
		decodeByteFallback([]string{"x", "<0xC3>", "<0xa9>", "<0xZZ>", "<0xC3>", "<0x41>", "-", "<0x+A>"}))
	n := hfNormalizer{{kind: normNFKC}, {kind: normReplace, text: " ", with: "▁"}, {kind: normPrepend, text: "▁"}}
	assert.Equal(t, "▁fi▁1", n.apply("ﬁ ①"))
	assert.Equal(t, "", n.apply(""))
}

// TestLlamaNormalizedAddedToken checks an added token marked "normalized":
// it is matched by its normalized content ("▁hi" under Prepend and
// Replace) in the normalized text, and decodes to that content; and an
// lstrip/rstrip token takes the spaces around it. The ids are
// tokenizers 0.23.2's (npm) for the same file (llama.js).
func TestLlamaNormalizedAddedToken(t *testing.T) {
	hf := readLlamaHF(t)
	var f map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(llamaFile(t, nil), &f))
	var added []hfAddedToken
	require.NoError(t, json.Unmarshal(f["added_tokens"], &added))
	require.Len(t, hf.Added.Tokens, 2)
	patch, err := json.Marshal(append(added, hf.Added.Tokens...))
	require.NoError(t, err)
	tok, err := parseTokenizer(llamaFile(t, map[string]json.RawMessage{"added_tokens": patch}))
	require.NoError(t, err)
	require.NotEmpty(t, hf.Added.Texts)
	for _, c := range hf.Added.Texts {
		ids, err := tok.Encode(c.Text)
		require.NoError(t, err)
		assert.Equal(t, c.IDs, ids, "%q", c.Text)
	}
	for _, c := range hf.Added.Decodes {
		text, err := tok.Decode(c.IDs)
		require.NoError(t, err)
		assert.Equal(t, c.Text, text, "%v", c.IDs)
	}
}

// TestBPEEncodeLinear fails if 1 MB of text takes more than a few
// seconds to encode, without spaces (one word: Llama's tokenizers have
// no whitespace pre-split) or with them (each becomes "▁"). Before, the
// layout went through sugarme/tokenizer, whose Replace normalizer took
// 5.9 s for 16 KB of Opticks and 3m41s for 64 KB; and with NFKC and
// Metaspace, 30 s for 1 MB without spaces.
func TestBPEEncodeLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes 1 MB")
	}
	for _, layout := range llamaLayouts {
		tok, err := parseTokenizer(llamaFile(t, layout.patch))
		require.NoError(t, err)
		for _, spaces := range []bool{false, true} {
			encodesWithin(t, tok, opticksOf(t, 1<<20, spaces), fmt.Sprintf("%s, spaces %v", layout.name, spaces), 5*time.Second)
		}
	}
}

// llamaLayouts are the Llama 2 layout of testdata/llama_bpe.json and one
// with NFKC and a splitting Metaspace.
var llamaLayouts = []struct {
	name  string
	patch map[string]json.RawMessage
}{
	{"llama2", nil},
	{"nfkc-metaspace", map[string]json.RawMessage{
		"normalizer":    json.RawMessage(`{"type": "NFKC"}`),
		"pre_tokenizer": json.RawMessage(`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}`),
	}},
}

// opticksOf returns n bytes of Opticks, repeated as needed and cut at a
// character boundary; without spaces, its white space removed.
func opticksOf(t testing.TB, n int, spaces bool) string {
	t.Helper()
	text := opticks(t)
	if !spaces {
		text = strings.Join(strings.Fields(text), "")
	}
	s := strings.Repeat(text, n/len(text)+1)[:n]
	return strings.ToValidUTF8(s, "")
}

// BenchmarkBPEEncodeNoSpaces encodes Opticks without its white space
// (one word) with the Llama 2 layout, and BenchmarkBPEEncodeText with
// it; the "nfkc-metaspace" sub-benchmarks use the other layout.
func BenchmarkBPEEncodeNoSpaces(b *testing.B) { benchmarkLlama(b, false) }

func BenchmarkBPEEncodeText(b *testing.B) { benchmarkLlama(b, true) }

func benchmarkLlama(b *testing.B, spaces bool) {
	for _, layout := range llamaLayouts {
		tok, err := parseTokenizer(llamaFile(b, layout.patch))
		require.NoError(b, err)
		for _, c := range []struct {
			name string
			size int
		}{{"16KB", 16 << 10}, {"256KB", 256 << 10}, {"1MB", 1 << 20}} {
			text := opticksOf(b, c.size, spaces)
			name := c.name
			if layout.patch != nil {
				name = layout.name + "/" + name
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for range b.N {
					if _, err := tok.Encode(text); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestSugarmeLayoutDecodesByteLevelHere checks that a model other than a
// BPE (a Unigram, once run by sugarme, now natively) still decodes with
// our ByteLevel decoder, which replaces invalid UTF-8 as tokenizers does
// (sugarme's writes the bytes).
func TestSugarmeLayoutDecodesByteLevelHere(t *testing.T) {
	tok, err := parseTokenizer([]byte(`{"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0],["Ã",-1],["a",-1],["ł",-1]]},"decoder":{"type":"ByteLevel"}}`))
	require.NoError(t, err)
	text, err := tok.Decode([]int{1, 2, 3})
	require.NoError(t, err)
	assert.Equal(t, "\uFFFDa\uFFFD", text)
}

// TestBPEIgnoreMergesNeedsNoDropout checks that ignore_merges applies
// only without dropout, as in tokenizers (model.rs takes the shortcut in
// tokenize_with_cache, which dropout skips): with dropout 1 every merge
// is skipped, so a word that is a token is its characters.
func TestBPEIgnoreMergesNeedsNoDropout(t *testing.T) {
	const file = `{"model": {"type": "BPE", "ignore_merges": true, "dropout": %s, "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}`
	for dropout, want := range map[string][]int{"null": {2}, "1.0": {0, 1}} {
		tok, err := parseTokenizer([]byte(strings.Replace(file, "%s", dropout, 1)))
		require.NoError(t, err)
		ids, err := tok.Encode("ab")
		require.NoError(t, err)
		assert.Equal(t, want, ids, "dropout %s", dropout)
	}
}

// encodesWithin fails t if tok takes more than limit to encode text (name
// says which), logging the time it took. An encoding past the limit goes
// on in the background until the test binary exits.
func encodesWithin(t *testing.T, tok Tokenizer, text, name string, limit time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := tok.Encode(text)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
		t.Logf("%s, %d bytes: %v", name, len(text), time.Since(start))
	case <-time.After(limit):
		t.Fatalf("%s: encoding %d bytes takes more than %v", name, len(text), limit)
	}
}

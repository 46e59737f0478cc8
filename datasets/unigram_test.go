package datasets

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unigramHF is testdata/unigram_hf.json: tokenizers' (npm) ids and
// decodes for testdata/unigram.json under five layouts, written by
// tools/hftokenizers/unigram.js.
type unigramHF struct {
	Tokenizers string `json:"tokenizers"`
	Variants   []struct {
		Name  string                     `json:"name"`
		Patch map[string]json.RawMessage `json:"patch"`
		Texts []struct {
			Text       string `json:"text"`
			IDs        []int  `json:"ids"`
			IDsSpecial []int  `json:"ids_special"` // only with a template
			Decoded    string `json:"decoded"`
		} `json:"texts"`
		Opticks struct {
			Bytes     int    `json:"bytes"`
			IDs       int    `json:"ids"`
			SHA256    string `json:"sha256"`
			Head      []int  `json:"head"`
			RoundTrip bool   `json:"round_trip"`
		} `json:"opticks"`
		Decodes []llamaDecode `json:"decodes"`
	} `json:"variants"`
}

// unigramFile returns testdata/unigram.json with the top-level keys of
// patch replaced.
func unigramFile(t testing.TB, patch map[string]json.RawMessage) []byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/unigram.json")
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

// TestUnigramMatchesHuggingFace checks a Unigram tokenizer (trained by
// tokenizers' own UnigramTrainer on Opticks) id for id against
// tokenizers 0.23.2 under five layouts (Metaspace with and without
// split, Whitespace, no pre-tokenizer, GPT-2's ByteLevel; with and
// without byte fallback; a vocabulary without most single characters, so
// unknown runs are fused and then fall back to bytes): texts with tabs, emoji, CJK, the special
// and byte pieces written out, and random Unicode, with the template's
// <s> where there is one, decodes of random ids, and all of Opticks as
// one text (by the hash of its ids).
func TestUnigramMatchesHuggingFace(t *testing.T) {
	raw, err := os.ReadFile("testdata/unigram_hf.json")
	require.NoError(t, err)
	var hf unigramHF
	require.NoError(t, json.Unmarshal(raw, &hf))
	require.Len(t, hf.Variants, 5)
	for _, v := range hf.Variants {
		t.Run(v.Name, func(t *testing.T) {
			tok, err := parseTokenizer(unigramFile(t, v.Patch))
			require.NoError(t, err)
			var h *hfTokenizer
			switch x := tok.(type) {
			case *hfTokenizer:
				h = x
			case *hfTemplated:
				h = x.hfTokenizer
			default:
				t.Fatalf("a Unigram file gives %T", tok)
			}
			require.True(t, h.native)
			require.NotNil(t, h.uni)
			for _, c := range v.Texts {
				ids, err := tok.Encode(c.Text)
				require.NoError(t, err)
				assert.Equal(t, c.IDs, ids, "encode %q", c.Text)
				if c.IDsSpecial != nil {
					withSpecials, _, err := tok.(*hfTemplated).EncodeWithSpecials(c.Text)
					require.NoError(t, err)
					assert.Equal(t, c.IDsSpecial, withSpecials, "encode with <s> %q", c.Text)
				}
				text, err := tok.Decode(c.IDs)
				require.NoError(t, err)
				assert.Equal(t, c.Decoded, text, "decode %v", c.IDs)
			}
			for _, c := range v.Decodes {
				text, err := tok.Decode(c.IDs)
				require.NoError(t, err)
				assert.Equal(t, c.Text, text, "decode %v", c.IDs)
			}
			text := opticks(t)
			require.Equal(t, v.Opticks.Bytes, len(text))
			ids, err := tok.Encode(text)
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

// TestUnigramViterbi checks the model on small vocabularies worked out
// from tokenizers' model.rs (the first case is its doc test); tokenizers
// 0.23.2 (npm) gives the same ids, the same error and the same decode.
func TestUnigramViterbi(t *testing.T) {
	for _, c := range []struct {
		name, model, text string
		want              []int
	}{
		{"tokenizers' doc test", `"unk_id": 0, "vocab": [["<unk>", 0], ["a", 0], ["b", 0], ["c", 0], ["d", 0], ["cd", 1], ["ab", 2], ["abc", 5], ["abcd", 10]]`,
			"abcdacdxx", []int{8, 1, 5, 0}}, // abcd a cd xx: the unknown x x fused
		{"byte fallback of a fused run", `"unk_id": 0, "byte_fallback": true, "vocab": [["<unk>", 0], ["a", -1], ["<0x78>", 0], ["<0x79>", 0]]`,
			"axyx", []int{1, 2, 3, 2}},
		{"byte fallback needs every byte", `"unk_id": 0, "byte_fallback": true, "vocab": [["<unk>", 0], ["a", -1], ["<0x78>", 0]]`,
			"axya", []int{1, 0, 1}},
		{"a tie keeps the first path found", `"unk_id": 0, "vocab": [["<unk>", 0], ["a", -1], ["b", -1], ["ab", -2]]`,
			"ab", []int{3}},
		{"a better path replaces it", `"unk_id": 0, "vocab": [["<unk>", 0], ["a", -1], ["b", -1], ["ab", -2.5]]`,
			"ab", []int{1, 2}},
		// The unknown X costs min score − 10 = −25: a Xb (−16) beats
		// a <unk> b (−27), though Xb is the worst piece.
		{"unknown penalty from the lowest score", `"unk_id": 0, "vocab": [["<unk>", 0], ["a", -1], ["b", -1], ["Xb", -15]]`,
			"aXb", []int{1, 3}},
		// "<unk>" in the text is the unknown piece, so it fuses with the
		// unknown x after it; "<unk>x" is no piece: one unknown id.
		{"the unknown piece written out fuses", `"unk_id": 0, "vocab": [["<unk>", 0], ["a", -1], ["<", -1], ["u", -1], ["n", -1], ["k", -1], [">", -1]]`,
			"a<unk>x", []int{1, 0}},
		{"a piece listed twice has its last id", `"unk_id": 0, "vocab": [["<unk>", 0], ["a", -1], ["a", -5]]`,
			"aa", []int{2, 2}},
		{"multi-byte characters", `"unk_id": 0, "vocab": [["<unk>", 0], ["日", -1], ["本", -1], ["日本", -1.5], ["😀", -1]]`,
			"日本😀語日", []int{3, 4, 0, 1}},
		{"no unk_id, every character known", `"vocab": [["a", -1], ["b", -1]]`, "abba", []int{0, 1, 1, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tok, err := parseTokenizer([]byte(`{"model": {"type": "Unigram", ` + c.model + `}}`))
			require.NoError(t, err)
			ids, err := tok.Encode(c.text)
			require.NoError(t, err)
			assert.Equal(t, c.want, ids)
		})
	}
	// Without unk_id an unknown character is an error, byte_fallback or
	// not (tokenizers: MissingUnkId).
	for _, fallback := range []string{"false", "true"} {
		tok, err := parseTokenizer([]byte(`{"model": {"type": "Unigram", "byte_fallback": ` + fallback + `, "vocab": [["a", -1], ["<0x78>", 0]]}}`))
		require.NoError(t, err)
		_, err = tok.Encode("ax")
		assert.ErrorContains(t, err, `character 'x' is not in the vocabulary, which has no unk_id`)
	}
	// Decoding is by index: a piece listed twice decodes from both ids.
	tok, err := parseTokenizer([]byte(`{"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0], ["a", -1], ["a", -5]]}, "decoder": {"type": "Fuse"}}`))
	require.NoError(t, err)
	text, err := tok.Decode([]int{1, 2, 0})
	require.NoError(t, err)
	assert.Equal(t, "aa<unk>", text)
}

// TestSerdeFloat checks that scores are read as tokenizers (serde_json)
// reads them, not always the nearest float64.
func TestSerdeFloat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
	}{
		// One ULP from strconv's: 9098476224317833 (more than 2^53) is
		// rounded to a float64, then divided by 1e15.
		{"-9.098476224317833", -(float64(9098476224317833) / 1e15)},
		{"0", 0},
		{"-2.5", -2.5},
		{"1.5e3", 1500},
		{"15E-1", 1.5},
		{"123456789012345678901234", float64(uint64(12345678901234567890)) * 1e4}, // digits past a uint64 dropped
		{"1e-400", 0},
	} {
		got, err := serdeFloat(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
	exact, err := strconv.ParseFloat("-9.098476224317833", 64)
	require.NoError(t, err)
	got, err := serdeFloat("-9.098476224317833")
	require.NoError(t, err)
	assert.NotEqual(t, exact, got, "serde_json's value is not the nearest here")
	for _, in := range []string{"", "-", "01", "1.", ".5", "1e", "1e+", "abc", "1x", "1e400", "--1"} {
		_, err := serdeFloat(in)
		assert.Error(t, err, "%q", in)
	}
}

// TestUnigramRefusals checks that a Unigram file with a part not run here
// is refused, naming the part (it no longer goes to sugarme/tokenizer),
// and that a malformed model is an error.
func TestUnigramRefusals(t *testing.T) {
	for _, c := range []struct {
		name, file, want string
	}{
		{"Precompiled", `{"normalizer": {"type": "Precompiled", "precompiled_charsmap": "AA=="}, "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0]]}}`,
			`normalizer "Precompiled" is not implemented: zoo runs a Unigram model itself`},
		{"Strip", `{"normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Strip", "strip_left": true, "strip_right": true}]}, "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0]]}}`,
			`normalizer "Strip" is not implemented`}, // Lowercase is ALBERT's (unigram_albert.go)
		{"BertPreTokenizer", `{"pre_tokenizer": {"type": "BertPreTokenizer"}, "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0]]}}`,
			`pre_tokenizer "BertPreTokenizer" is not implemented`},
		{"CTC decoder", `{"decoder": {"type": "CTC"}, "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0]]}}`,
			`decoder "CTC" is not implemented`},
		{"unk_id outside", `{"model": {"type": "Unigram", "unk_id": 1, "vocab": [["<unk>", 0]]}}`, "unk_id 1 is not an index"},
		{"unk_id, no vocab", `{"model": {"type": "Unigram", "unk_id": 0, "vocab": []}}`, "the vocabulary is empty but unk_id is set"},
		{"no vocab", `{"model": {"type": "Unigram"}}`, `a Unigram needs "vocab"`},
		{"not a pair", `{"model": {"type": "Unigram", "vocab": [["a"]]}}`, "vocab entry 0 is not a [piece, score] pair"},
		{"score not a number", `{"model": {"type": "Unigram", "vocab": [["a", "x"]]}}`, "vocab entry 0: score"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseTokenizer([]byte(c.file))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// TestWhitespaceWords checks the Whitespace (\w+|[^\w\s]+) and
// WhitespaceSplit pre-tokenizers.
func TestWhitespaceWords(t *testing.T) {
	split := func(s string, only bool) []string {
		var out []string
		require.NoError(t, whitespaceWords(s, only, func(w string) error { out = append(out, w); return nil }))
		return out
	}
	assert.Equal(t, []string{"Hey", "friend", "!", "How", "are", "you", "?!?", "é", "1_2", "—", "日本"},
		split("Hey friend!\tHow are\u00a0you?!? é 1_2 — 日本", false))
	assert.Equal(t, []string{"Hey", "friend!", "How", "are", "you?!?"}, split(" Hey friend!\tHow are\u2003you?!?  ", true))
	assert.Empty(t, split(" \t\n", false))
}

// unigramLayouts are the T5-like layout of testdata/unigram.json
// (Metaspace splits at each space) and one with byte fallback and no
// split (a text is one word of the lattice).
var unigramLayouts = []struct {
	name  string
	patch map[string]json.RawMessage
}{
	{"t5", nil},
	{"nosplit", map[string]json.RawMessage{
		"normalizer":    json.RawMessage(`{"type": "NFKC"}`),
		"pre_tokenizer": json.RawMessage(`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false}`),
	}},
}

// TestUnigramEncodeLinear fails if 1 MB of text takes more than a few
// seconds to encode, with or without spaces, in either layout: the
// lattice costs the text's length times the longest piece.
func TestUnigramEncodeLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes 1 MB")
	}
	for _, layout := range unigramLayouts {
		tok, err := parseTokenizer(unigramFile(t, layout.patch))
		require.NoError(t, err)
		for _, spaces := range []bool{false, true} {
			encodesWithin(t, tok, opticksOf(t, 1<<20, spaces), fmt.Sprintf("%s, spaces %v", layout.name, spaces), 5*time.Second)
		}
	}
}

// BenchmarkUnigramEncodeNoSpaces encodes 1 MB of Opticks without its
// white space, and BenchmarkUnigramEncodeText with it, in both layouts.
func BenchmarkUnigramEncodeNoSpaces(b *testing.B) { benchmarkUnigram(b, false) }

func BenchmarkUnigramEncodeText(b *testing.B) { benchmarkUnigram(b, true) }

func benchmarkUnigram(b *testing.B, spaces bool) {
	text := opticksOf(b, 1<<20, spaces)
	for _, layout := range unigramLayouts {
		tok, err := parseTokenizer(unigramFile(b, layout.patch))
		require.NoError(b, err)
		b.Run(layout.name+"/1MB", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for range b.N {
				if _, err := tok.Encode(text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package datasets

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// llama3HF is testdata/llama3_bpe_hf.json: tokenizers' (npm) ids and
// decodes for testdata/llama3_bpe.json and qwen2_bpe.json under several
// pre-tokenizers, written by tools/hftokenizers/llama3.js.
type llama3HF struct {
	Tokenizers string `json:"tokenizers"`
	Variants   []struct {
		Name  string                     `json:"name"`
		Base  string                     `json:"base"`
		Patch map[string]json.RawMessage `json:"patch"`
		Texts []struct {
			Text       string   `json:"text"`
			Pieces     []string `json:"pieces"`
			IDs        []int    `json:"ids"`
			IDsSpecial []int    `json:"ids_special"`
			Decoded    string   `json:"decoded"`
		} `json:"texts"`
		Opticks struct {
			Bytes     int    `json:"bytes"`
			IDs       int    `json:"ids"`
			SHA256    string `json:"sha256"`
			Head      []int  `json:"head"`
			RoundTrip bool   `json:"round_trip"`
		} `json:"opticks"`
		Decodes []llamaDecode `json:"decodes"`
		// Random holds short random texts and their words.
		Random []struct {
			Text   string   `json:"text"`
			Pieces []string `json:"pieces"`
		} `json:"random"`
	} `json:"variants"`
}

// llama3File returns testdata/<base> with the top-level keys of patch
// replaced.
func llama3File(t testing.TB, base string, patch map[string]json.RawMessage) []byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + base)
	require.NoError(t, err)
	var f map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &f))
	for k, v := range patch {
		f[k] = v
	}
	out, err := json.Marshal(f)
	require.NoError(t, err)
	return out
}

// TestLlama3BPEMatchesHuggingFace checks Llama-3- and Qwen2-style
// tokenizers (a byte-level BPE trained by tokenizers' own BpeTrainer on
// Opticks behind a Split with the model's regular expression and a
// ByteLevel without its own) id for id against tokenizers 0.23.2: texts
// with contractions in any case, digit runs, mixed scripts, \r\n runs,
// leading and trailing white space, emoji and random Unicode, with and
// without the template's <|begin_of_text|>, decodes of random ids (byte
// tokens that are invalid UTF-8 included), and all of Opticks as one
// text (by the hash of its ids), and the words of the pre-tokenizer
// alone (which show a wrong split even where the small vocabulary would
// give the same ids), also of 300 short random texts; and the same file under GPT-2's pattern
// in a Split, a ByteLevel with its own regex after the Split, and a
// String pattern and Llama 3's with every Split behavior, inverted or
// not.
func TestLlama3BPEMatchesHuggingFace(t *testing.T) {
	raw, err := os.ReadFile("testdata/llama3_bpe_hf.json")
	require.NoError(t, err)
	var hf llama3HF
	require.NoError(t, json.Unmarshal(raw, &hf))
	require.Len(t, hf.Variants, 20)
	text := opticks(t)
	for _, v := range hf.Variants {
		t.Run(v.Name, func(t *testing.T) {
			tok, err := parseTokenizer(llama3File(t, v.Base, v.Patch))
			require.NoError(t, err)
			var h *hfTokenizer
			switch x := tok.(type) {
			case *hfTemplated:
				h = x.hfTokenizer
			case *hfTokenizer:
				h = x
			default:
				t.Fatalf("got a %T", tok)
			}
			require.True(t, h.native, "the layout is run natively")
			require.NotEmpty(t, v.Texts)
			words := func(text string) []string {
				pieces := []string{}
				require.NoError(t, h.preTokenize(text, true, func(w string, byteLevel bool) error {
					if byteLevel {
						w = byteSymbolsOf(w)
					}
					pieces = append(pieces, w)
					return nil
				}))
				return pieces
			}
			for _, c := range v.Random {
				assert.Equal(t, c.Pieces, words(c.Text), "pre-tokenize %q", c.Text)
			}
			for _, c := range v.Texts {
				assert.Equal(t, c.Pieces, words(c.Text), "pre-tokenize %q", c.Text)
				ids, err := tok.Encode(c.Text)
				require.NoError(t, err)
				assert.Equal(t, c.IDs, ids, "encode %q", c.Text)
				if pe, ok := tok.(PairEncoder); ok {
					withSpecials, _, err := pe.EncodeWithSpecials(c.Text)
					require.NoError(t, err)
					assert.Equal(t, c.IDsSpecial, withSpecials, "encode with the template %q", c.Text)
				} else {
					assert.Equal(t, c.IDs, c.IDsSpecial, "no template: no special tokens added")
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

			require.Equal(t, v.Opticks.Bytes, len(text))
			ids, err := tok.Encode(text)
			require.NoError(t, err)
			assert.Equal(t, v.Opticks.IDs, len(ids))
			assert.Equal(t, v.Opticks.Head, ids[:min(len(ids), len(v.Opticks.Head))])
			assert.Equal(t, v.Opticks.SHA256, idsHash(ids), "the ids of Opticks differ from tokenizers'")
			back, err := tok.Decode(ids)
			require.NoError(t, err)
			assert.Equal(t, v.Opticks.RoundTrip, back == text)
		})
	}
}

// hostileTexts are 1 MB texts that make a backtracking matcher of Llama
// 3's pattern slow, or make one piece of the whole text: white space
// only, white space before a word, line breaks with spaces between,
// Opticks without white space, digits, punctuation, and Opticks itself.
func hostileTexts(t testing.TB, n int) []struct{ name, text string } {
	return []struct{ name, text string }{
		{"spaces", strings.Repeat(" ", n)},
		{"spaces-then-word", strings.Repeat(" ", n-1) + "x"},
		{"newlines-and-spaces", strings.Repeat(" \n", n/2)},
		{"crlf-runs", strings.Repeat("\r\n\r\n  \t", n/7)},
		{"nospaces", opticksOf(t, n, false)},
		{"digits", strings.Repeat("1234567890", n/10)},
		{"punctuation", strings.Repeat("!?.,;", n/5)},
		{"apostrophes", strings.Repeat("'", n)},
		{"text", opticksOf(t, n, true)},
	}
}

// TestLlama3EncodeLinear fails if a 1 MB hostile text takes more than a
// few seconds to encode with Llama 3's layout (tokenizers takes 0.3 s for
// Opticks); each runs in well under a second.
func TestLlama3EncodeLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes 1 MB texts")
	}
	tok, err := parseTokenizer(llama3File(t, "llama3_bpe.json", nil))
	require.NoError(t, err)
	for _, c := range hostileTexts(t, 1<<20) {
		encodesWithin(t, tok, c.text, c.name, 5*time.Second)
	}
}

// BenchmarkLlama3Encode encodes the hostile texts (Opticks among them)
// of 256 KB and 1 MB with Llama 3's layout: the time per byte is the same
// at both sizes.
func BenchmarkLlama3Encode(b *testing.B) {
	tok, err := parseTokenizer(llama3File(b, "llama3_bpe.json", nil))
	require.NoError(b, err)
	var cases []struct{ name, text string }
	for _, size := range []struct {
		name string
		n    int
	}{{"256KB", 256 << 10}, {"1MB", 1 << 20}} {
		for _, c := range hostileTexts(b, size.n) {
			cases = append(cases, struct{ name, text string }{c.name + "/" + size.name, c.text})
		}
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for range b.N {
				if _, err := tok.Encode(c.text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSplitBehaviors checks each Split behavior on the example of
// tokenizers' documentation (pattern "-" in "the-final--countdown"), and
// inverted (worked out from NormalizedString::split: the two gaps "-" and
// "-" stay two pieces; the cross-check runs the same on Opticks).
func TestSplitBehaviors(t *testing.T) {
	for _, c := range []struct {
		behavior string
		invert   bool
		want     []string
	}{
		{"Removed", false, []string{"the", "final", "countdown"}},
		{"Isolated", false, []string{"the", "-", "final", "-", "-", "countdown"}},
		{"MergedWithPrevious", false, []string{"the-", "final-", "-", "countdown"}},
		{"MergedWithNext", false, []string{"the", "-final", "-", "-countdown"}},
		{"Contiguous", false, []string{"the", "-", "final", "--", "countdown"}},
		{"Removed", true, []string{"-", "-", "-"}},
		{"Isolated", true, []string{"the", "-", "final", "-", "-", "countdown"}},
		{"MergedWithPrevious", true, []string{"the", "-final", "-", "-countdown"}},
		{"MergedWithNext", true, []string{"the-", "final-", "-", "countdown"}},
		{"Contiguous", true, []string{"the", "-", "final", "--", "countdown"}},
	} {
		sp, err := parseSplit(json.RawMessage(`{"type": "Split", "pattern": {"String": "-"}, "behavior": "` + c.behavior + `", "invert": ` + strconv.FormatBool(c.invert) + `}`))
		require.NoError(t, err)
		var got []string
		require.NoError(t, sp.split("the-final--countdown", func(p string) error { got = append(got, p); return nil }))
		assert.Equal(t, c.want, got, "%s, invert %v", c.behavior, c.invert)
	}
}

// TestSplitRefusals checks that a Split or pre-tokenizer Sequence not run
// here is refused by name: alone, after sugarme/tokenizer fails on it
// (Go's regexp has no look-ahead); beside parts run here (Qwen2's NFC),
// at once. A Split with a regex sugarme runs, and nothing else of ours,
// still goes to sugarme, as before.
func TestSplitRefusals(t *testing.T) {
	seq := func(pre ...string) string {
		return `{"type": "Sequence", "pretokenizers": [` + strings.Join(pre, ", ") + `]}`
	}
	const byteLevel = `{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}`
	split := func(pattern, behavior string) string {
		return `{"type": "Split", "pattern": ` + pattern + `, "behavior": "` + behavior + `", "invert": false}`
	}
	llama3, _ := json.Marshal(llama3Pattern)
	lookahead := split(`{"Regex": "\\s+(?!\\S)|x"}`, "Isolated")
	for _, c := range []struct {
		name, base, pre string
		want            []string
	}{
		{"other regex, alone", "llama3_bpe.json", seq(lookahead, byteLevel),
			[]string{`pre_tokenizer "Split" with the Regex "\\s+(?!\\S)|x" (zoo runs GPT-2's, Llama 3's and Qwen2's patterns) is not implemented`, "sugarme/tokenizer cannot run it"}},
		{"other regex, beside NFC", "qwen2_bpe.json", seq(lookahead, byteLevel),
			[]string{`pre_tokenizer "Split" with the Regex "\\s+(?!\\S)|x"`, `zoo runs normalizer "NFC" itself`}},
		{"ByteLevel first", "qwen2_bpe.json", seq(byteLevel, split(`{"Regex": `+string(llama3)+`}`, "Isolated")),
			[]string{`pre_tokenizer "Sequence" with a "ByteLevel" before its last pre-tokenizer is not implemented`}},
		{"Metaspace in a Sequence", "qwen2_bpe.json", seq(`{"type": "Metaspace", "replacement": "▁"}`, byteLevel),
			[]string{`pre_tokenizer "Sequence" holding "Metaspace" is not implemented`}},
		{"empty String", "qwen2_bpe.json", seq(split(`{"String": ""}`, "Isolated"), byteLevel),
			[]string{`pre_tokenizer "Split" with an empty pattern is not implemented`}},
		{"bad behavior", "qwen2_bpe.json", seq(split(`{"String": " "}`, "Merged"), byteLevel),
			[]string{`behavior "Merged" is none of`}},
		{"no pattern", "qwen2_bpe.json", split(`{}`, "Isolated"),
			[]string{`"pattern" is neither`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseTokenizer(llama3File(t, c.base, map[string]json.RawMessage{"pre_tokenizer": json.RawMessage(c.pre)}))
			require.Error(t, err)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}

	tok, err := parseTokenizer(llama3File(t, "llama3_bpe.json", map[string]json.RawMessage{"pre_tokenizer": json.RawMessage(seq(split(`{"Regex": "\\d+"}`, "Isolated"), byteLevel))}))
	require.NoError(t, err)
	h, ok := tok.(*hfTokenizer)
	require.True(t, ok, "got a %T", tok)
	require.False(t, h.native, "left to sugarme")
	ids, err := tok.Encode("abc 123")
	require.NoError(t, err)
	assert.NotEmpty(t, ids)
}

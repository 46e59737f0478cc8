package datasets

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unigramHF is testdata/unigram_hf.json: tokenizers' (npm) ids and
// decodes for testdata/unigram.json under four layouts, written by
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
// tokenizers 0.23.2 under four layouts (Metaspace with and without
// split, Whitespace, no pre-tokenizer; with and without byte fallback; a
// vocabulary without most single characters, so unknown runs are fused
// and then fall back to bytes): texts with tabs, emoji, CJK, the special
// and byte pieces written out, and random Unicode, with the template's
// <s> where there is one, decodes of random ids, and all of Opticks as
// one text (by the hash of its ids).
func TestUnigramMatchesHuggingFace(t *testing.T) {
	raw, err := os.ReadFile("testdata/unigram_hf.json")
	require.NoError(t, err)
	var hf unigramHF
	require.NoError(t, json.Unmarshal(raw, &hf))
	require.Len(t, hf.Variants, 4)
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

package datasets

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// albertHF is testdata/albert_unigram_hf.json: tokenizers' (npm) ids,
// type ids and decodes for testdata/albert_unigram.json, ALBERT's layout
// (albert-base-v2's normalizer, pre-tokenizer, template and decoder),
// written by tools/hftokenizers/albert.js.
type albertHF struct {
	Tokenizers string `json:"tokenizers"`
	Texts      []struct {
		Text       string   `json:"text"`
		IDs        []int    `json:"ids"`
		Offsets    [][2]int `json:"offsets"` // in characters
		IDsSpecial []int    `json:"ids_special"`
		TypeIDs    []int    `json:"type_ids"`
		Decoded    string   `json:"decoded"`
	} `json:"texts"`
	Pairs []struct {
		A       string `json:"a"`
		B       string `json:"b"`
		IDs     []int  `json:"ids"`
		TypeIDs []int  `json:"type_ids"`
	} `json:"pairs"`
	Decodes []llamaDecode `json:"decodes"`
	Opticks struct {
		Bytes  int    `json:"bytes"`
		IDs    int    `json:"ids"`
		SHA256 string `json:"sha256"`
		Head   []int  `json:"head"`
	} `json:"opticks"`
}

// An ALBERT tokenizer.json gives tokenizers' ids: the normalizer Sequence
// [Replace, Replace, NFKD, StripAccents, Lowercase], the pre-tokenizer
// Sequence [WhitespaceSplit, Metaspace], the [CLS] $A [SEP] template and
// its pair, the Metaspace decoder, and Opticks' ids to the last.
func TestAlbertUnigramMatchesHuggingFace(t *testing.T) {
	raw, err := os.ReadFile("testdata/albert_unigram_hf.json")
	require.NoError(t, err)
	var hf albertHF
	require.NoError(t, json.Unmarshal(raw, &hf))
	file, err := os.ReadFile("testdata/albert_unigram.json")
	require.NoError(t, err)
	tok, err := parseTokenizer(file)
	require.NoError(t, err)
	tpl, ok := tok.(*hfTemplated)
	require.True(t, ok, "a template: %T", tok)
	require.True(t, tpl.native, "zoo runs ALBERT's Unigram itself")
	require.NotNil(t, tpl.uni)
	for _, c := range hf.Texts {
		ids, err := tok.Encode(c.Text)
		require.NoError(t, err)
		assert.Equal(t, c.IDs, ids, "encode %q", c.Text)
		withSpecials, types, err := tpl.EncodeWithSpecials(c.Text)
		require.NoError(t, err)
		assert.Equal(t, c.IDsSpecial, withSpecials, "encode with [CLS] [SEP] %q", c.Text)
		assert.Equal(t, c.TypeIDs, types, "type ids %q", c.Text)
		text, err := tok.Decode(c.IDs)
		require.NoError(t, err)
		assert.Equal(t, c.Decoded, text, "decode %v", c.IDs)
		// Offsets: tokenizers' characters as bytes of the text.
		oids, offs, err := tpl.EncodeOffsets(c.Text)
		require.NoError(t, err)
		assert.Equal(t, append([]int{}, c.IDs...), append([]int{}, oids...), "offsets' ids %q", c.Text)
		byteAt := []int{}
		for i := range c.Text {
			byteAt = append(byteAt, i)
		}
		byteAt = append(byteAt, len(c.Text))
		var want []WordSpan
		for _, o := range c.Offsets {
			want = append(want, WordSpan{byteAt[o[0]], byteAt[o[1]]})
		}
		assert.Equal(t, append([]WordSpan{}, want...), append([]WordSpan{}, offs...), "offsets %q", c.Text)
	}
	for _, c := range hf.Pairs {
		ids, types, err := tpl.EncodePair(c.A, c.B)
		require.NoError(t, err)
		assert.Equal(t, c.IDs, ids, "pair %q %q", c.A, c.B)
		assert.Equal(t, c.TypeIDs, types, "pair types %q %q", c.A, c.B)
	}
	for _, c := range hf.Decodes {
		text, err := tok.Decode(c.IDs)
		require.NoError(t, err)
		assert.Equal(t, c.Text, text, "decode %v", c.IDs)
	}
	text := opticks(t)
	require.Equal(t, hf.Opticks.Bytes, len(text))
	ids, err := tok.Encode(text)
	require.NoError(t, err)
	assert.Equal(t, hf.Opticks.IDs, len(ids))
	assert.Equal(t, hf.Opticks.Head, ids[:len(hf.Opticks.Head)])
	assert.Equal(t, hf.Opticks.SHA256, idsHash(ids), "the ids of Opticks differ from tokenizers'")
	oids, offs, err := tpl.EncodeOffsets(text)
	require.NoError(t, err)
	assert.Equal(t, ids, oids, "EncodeOffsets' ids of Opticks are Encode's")
	for i, o := range offs {
		require.True(t, o.Start >= 0 && o.Start < o.End && o.End <= len(text), "token %d: %v", i, o)
	}
}

// The normalizers ALBERT's layout adds, each alone, and the pre-tokenizer
// sequence it refuses.
func TestAlbertNormalizers(t *testing.T) {
	model := `"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0], ["a", -1]]}`
	for _, c := range []struct{ norm, in, want string }{
		{`{"type": "NFKD"}`, "ﬁé", "fie\u0301"},
		{`{"type": "NFD"}`, "ﬁé", "ﬁe\u0301"},
		{`{"type": "StripAccents"}`, "e\u0301क\u093f\u20dd", "eक"}, // Mn, Mc and Me
		{`{"type": "Lowercase"}`, "AÉİΣ", "aéi\u0307σ"},
	} {
		tok, err := parseTokenizer([]byte(`{"normalizer": ` + c.norm + `, ` + model + `}`))
		require.NoError(t, err, c.norm)
		h := tok.(*hfTokenizer)
		assert.Equal(t, c.want, h.norm.apply(c.in), c.norm)
	}
	_, err := parseTokenizer([]byte(`{"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"},
		{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true}]}, ` + model + `}`))
	require.ErrorContains(t, err, `prepend_scheme "first"`)

	// Offsets of a Unigram need a whitespace split, and no composition.
	for _, c := range []struct{ file, want string }{
		{`{"pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}, ` + model + `}`, "Whitespace or WhitespaceSplit"},
		{`{"normalizer": {"type": "NFC"}, "pre_tokenizer": {"type": "WhitespaceSplit"}, ` + model + `}`, "NFC or NFKC"},
	} {
		tok, err := parseTokenizer([]byte(c.file))
		require.NoError(t, err)
		_, _, err = tok.(*hfTokenizer).EncodeOffsets("a a")
		require.ErrorContains(t, err, c.want)
	}
}

package datasets

// The tokenizer pieces ALBERT's tokenizer.json (albert-base-v2's, a
// SentencePiece Unigram converted by transformers) needs beyond the other
// Unigram layouts: the normalizers NFKD, StripAccents and Lowercase (with
// Replace ``→" and ''→" before them), and the pre-tokenizer Sequence of
// WhitespaceSplit then Metaspace.

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// stripMarks drops every combining mark (General_Category M: Mn, Mc, Me),
// as tokenizers' StripAccents normalizer does (unicode-normalization's
// is_combining_mark); BertNormalizer's strip_accents drops Mn only
// (stripMn).
func stripMarks(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= utf8.RuneSelf && unicode.Is(unicode.M, r) {
			return -1
		}
		return r
	}, s)
}

// parseWordsMetaspace reads a pre_tokenizer Sequence of Whitespace or
// WhitespaceSplit then Metaspace (ALBERT's) for a Unigram model: each
// word of the split goes through the Metaspace. ok is false for any other
// sequence, which parsePreSequence reads. Metaspace's prepend_scheme
// "first" is refused there: tokenizers decides it by the word's offset in
// the input, which this split does not track.
func (t *hfTokenizer) parseWordsMetaspace(flat []json.RawMessage) (ok bool, err error) {
	if len(flat) != 2 || t.uni == nil {
		return false, nil
	}
	var a, b struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(flat[0], &a) != nil || json.Unmarshal(flat[1], &b) != nil ||
		a.Type != "Whitespace" && a.Type != "WhitespaceSplit" || b.Type != "Metaspace" {
		return false, nil
	}
	m, err := parseMetaspace(flat[1], "pre_tokenizer")
	if err != nil {
		return true, err
	}
	if m.scheme == prependFirst {
		return true, &unsupportedError{fmt.Sprintf(`pre_tokenizer "Sequence" of %q and a "Metaspace" with prepend_scheme "first"`, a.Type)}
	}
	t.meta, t.ws = m, 1
	if a.Type == "WhitespaceSplit" {
		t.ws = 2
	}
	return true, nil
}

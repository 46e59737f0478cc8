package datasets

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestEncodeOffsets checks the offsets of each token against the spans
// tokenizers' offset mapping gives, worked out by hand: pieces split
// their word, punctuation is its own word, an unknown word is whole, and
// characters the normalizer drops or changes map back to the text.
func TestEncodeOffsets(t *testing.T) {
	tok, err := LoadTokenizer(filepath.Join("testdata", "wordpiece_tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	wp := tok.(*WordPiece)
	for _, c := range []struct {
		text    string
		offsets []WordSpan
	}{
		// the lights , un ##aff ##able !
		{"The lights, unaffable!", []WordSpan{{0, 3}, {4, 9}, {9, 10}, {10, 11}, {12, 14}, {14, 17}, {17, 21}, {21, 22}}},
		// "Café" lowercased and stripped keeps its 4 characters (5 bytes);
		// the normalizer drops the NUL and the zero-width space, which
		// belong to no piece: "rays\u200bx" is ray, ##s, ##x.
		{"Café PRISM\u0000 rays\u200bx raying", []WordSpan{{0, 5}, {6, 11}, {13, 16}, {16, 17}, {20, 21}, {22, 25}, {25, 28}}},
		// "İ" normalizes to "i" (lowercased to i and a combining dot, the
		// dot stripped): the piece covers the 2 bytes of İ.
		{"the İ ı", []WordSpan{{0, 3}, {4, 6}, {7, 9}}},
		// Punctuation and CJK ideographs are words of their own.
		{"don't 中中x", []WordSpan{{0, 3}, {3, 4}, {4, 5}, {6, 9}, {9, 12}, {12, 13}}},
		// [UNK] covers its whole word (13 characters, past the maximum).
		{"xxxxxxxxxxxxx xxxxxxxxxxxx", []WordSpan{{0, 13}, {14, 15}, {15, 16}, {16, 17}, {17, 18}, {18, 19}, {19, 20}, {20, 21}, {21, 22}, {22, 23}, {23, 24}, {24, 25}, {25, 26}}},
		{"", nil},
		{"  the  light ", []WordSpan{{2, 5}, {7, 12}}},
	} {
		ids, offs, err := wp.EncodeOffsets(c.text)
		if err != nil {
			t.Fatal(err)
		}
		want, err := wp.Encode(c.text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids, want) || len(offs) != len(ids) {
			t.Fatalf("%q: ids %v (%d offsets), Encode %v", c.text, ids, len(offs), want)
		}
		if !slices.Equal(offs, c.offsets) {
			t.Errorf("%q: offsets %v, want %v", c.text, offs, c.offsets)
		}
	}
}

// TestEncodeOffsetsInvariants checks, on awkward texts, that
// EncodeOffsets gives EncodeWords' ids and, for each, a non-empty range of
// the text that starts no earlier than the one before and lies within the
// token's word.
func TestEncodeOffsetsInvariants(t *testing.T) {
	tok, err := LoadTokenizer(filepath.Join("testdata", "wordpiece_tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	wp := tok.(*WordPiece)
	for _, text := range []string{
		"", " ", "\u0000", "e\u0301\u0323x", "a\u0323\u0301b raying", "ÀÉÎÕÜ lights", "ﬁ ligature", "İİİ", "\u200b\u200b",
		"x\ty\nz", "中x中", "[SEP] the [MASK]", "ǅ Ǆ ǆ", "straße", "unaffable!!", "\ufffd?", "𝔘𝔫𝔦 rays",
	} {
		ids, offs, err := wp.EncodeOffsets(text)
		if err != nil {
			t.Fatal(err)
		}
		want, words, err := wp.EncodeWords(text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids, want) || len(offs) != len(ids) {
			t.Fatalf("%q: ids %v (%d offsets), EncodeWords %v", text, ids, len(offs), want)
		}
		for i, o := range offs {
			if o.Start >= o.End || o.Start < words[i].Start || o.End > words[i].End || i > 0 && o.Start < offs[i-1].Start {
				t.Errorf("%q: token %d at %v (word %v, previous %v)", text, i, o, words[i], offs[max(i-1, 0)])
			}
		}
	}
}

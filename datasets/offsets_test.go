package datasets

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestEncodeOffsets checks the offsets of each token against the spans
// tokenizers' offset mapping gives, worked out by hand: pieces split
// their word, punctuation is its own word, an unknown word is whole, and
// a word the normalizer changes in length gives each piece the whole word.
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
		// the normalizer drops the NUL and the zero-width space, so those
		// words' pieces each get the whole word (tokenizers would split
		// "rays\u200bx" into ray [13, 16), ##s [16, 17), ##x [20, 21)).
		{"Café PRISM\u0000 rays\u200bx raying", []WordSpan{{0, 5}, {6, 12}, {13, 21}, {13, 21}, {13, 21}, {22, 25}, {25, 28}}},
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

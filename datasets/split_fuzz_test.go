package datasets

import (
	"testing"
	"unicode/utf8"
)

// FuzzCl100kPieces checks that the matches of Llama 3's and Qwen2's
// patterns are non-empty, in order and cover the text (so encoding ends
// and loses nothing), that Qwen2's digits come one by one and Llama 3's
// at most three together, and that every piece is whole characters.
func FuzzCl100kPieces(f *testing.F) {
	for _, s := range []string{"", " ", "a'ſx 'LL", "1234567", "\r\n\r\n  \t x", "  \u00a0\u3000y", "!!!\n\nab", "😀 👍🏽", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // Encode refuses it first
		}
		for _, maxDigits := range []int{1, 3} {
			at := 0
			cl100kPieces(s, maxDigits, func(lo, hi int) {
				if lo != at || hi <= lo || hi > len(s) {
					t.Fatalf("%q: piece [%d, %d) after %d", s, lo, hi, at)
				}
				piece := s[lo:hi]
				if !utf8.ValidString(piece) {
					t.Fatalf("%q: piece %q cuts a character", s, piece)
				}
				if c, _ := classAt(piece, 0); c == classNumber && utf8.RuneCountInString(piece) > maxDigits {
					t.Fatalf("%q: %q has more than %d digits", s, piece, maxDigits)
				}
				at = hi
			})
			if at != len(s) {
				t.Fatalf("%q: the pieces end at %d of %d", s, at, len(s))
			}
		}
	})
}

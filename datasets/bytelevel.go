package datasets

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/normalizer"
)

// GPT-2's pre-tokenizer splits text with the regular expression
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// (openai/gpt-2 src/encoder.py; Hugging Face's ByteLevel pre-tokenizer
// uses the same). Go's regexp has no look-ahead, so sugarme/tokenizer
// drops the last two alternatives and leaves whitespace to the gaps
// between matches. That differs from GPT-2 on a run of whitespace before a
// word that does not end in a plain space ("\n\nThe" is "\n", "\n", "The"
// in GPT-2 but "\n\n", "The" in sugarme), and Go's \s is ASCII-only where
// GPT-2's is Unicode. gpt2Pieces follows the regular expression exactly
// (tools/hftokenizers checks it on Opticks and on random text of many
// scripts); hfTokenizer uses it directly, and byteLevel below is
// sugarme's ByteLevel pre-tokenizer with the split done by it, for the
// layouts sugarme runs.

// gpt2Pieces calls emit with the byte range of each piece of s, in order,
// as GPT-2's regular expression cuts it. The pieces cover s.
func gpt2Pieces(s string, emit func(lo, hi int)) {
	pos := 0
	for pos < len(s) {
		if s[pos] == '\'' {
			if n := contraction(s[pos:]); n > 0 {
				emit(pos, pos+n)
				pos += n
				continue
			}
		}
		// " ?\p{L}+", " ?\p{N}+" and " ?[^\s\p{L}\p{N}]+".
		class, w := classAt(s, pos)
		p := pos
		if s[pos] == ' ' && pos+1 < len(s) {
			if c2, w2 := classAt(s, pos+1); c2 != classSpace {
				p, class, w = pos+1, c2, w2
			}
		}
		if class != classSpace {
			end := p + w
			for end < len(s) {
				c, w := classAt(s, end)
				if c != class {
					break
				}
				end += w
			}
			emit(pos, end)
			pos = end
			continue
		}
		// "\s+(?!\S)" then "\s+": a whitespace run at the end of s is one
		// piece; before other text, its last character is left out of it,
		// and is a piece of its own unless it is a space, which the next
		// piece takes.
		end, last := pos, pos
		for end < len(s) {
			c, w := classAt(s, end)
			if c != classSpace {
				break
			}
			last = end
			end += w
		}
		if end == len(s) {
			emit(pos, end)
			pos = end
			continue
		}
		if last > pos {
			emit(pos, last)
		}
		pos = last
		if s[last] != ' ' {
			emit(last, end)
			pos = end
		}
	}
}

// contraction returns the length of the English contraction s starts
// with ('s 't 're 've 'm 'll 'd, case-sensitive as in GPT-2), or 0.
func contraction(s string) int {
	for _, c := range []string{"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"} {
		if strings.HasPrefix(s, c) {
			return len(c)
		}
	}
	return 0
}

// The classes of characters GPT-2's regular expression tells apart.
const (
	classLetter = iota // \p{L}
	classNumber        // \p{N}
	classOther         // [^\s\p{L}\p{N}]
	classSpace         // \s (Unicode White_Space)
)

// asciiClass is the class of each ASCII character.
var asciiClass = func() (t [utf8.RuneSelf]int8) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = runeClass(r)
	}
	return t
}()

// classAt returns the class and the length of the character at s[i:].
func classAt(s string, i int) (class int8, width int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	return runeClass(r), w
}

// runeClass returns the class of r.
func runeClass(r rune) int8 {
	switch {
	case unicode.IsSpace(r):
		return classSpace
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classNumber
	}
	return classOther
}

// byteSym[b] is the byte-level symbol of byte b, and symByte[r] the byte
// of symbol r (-1 for a rune that is none): GPT-2's bytes_to_unicode
// (openai/gpt-2 src/encoder.py), which keeps the printable bytes ! … ~,
// ¡ … ¬ and ® … ÿ as themselves and maps the other 68, in order, to
// U+0100 onwards ("Ġ" for a space, "Ċ" for a newline).
var byteSym, symByte = func() (syms [256]string, bytes [324]int16) {
	for i := range bytes {
		bytes[i] = -1
	}
	n := 0
	for b := range 256 {
		r := rune(b)
		if !('!' <= b && b <= '~' || 0xA1 <= b && b <= 0xAC || 0xAE <= b && b <= 0xFF) {
			r = rune(256 + n)
			n++
		}
		syms[b], bytes[r] = string(r), int16(b)
	}
	return syms, bytes
}()

// byteSymbolsOf maps each byte of s to its byte-level symbol ("Ġ" for a
// space, ...).
func byteSymbolsOf(s string) string {
	b := make([]byte, 0, 2*len(s))
	for i := range len(s) {
		b = append(b, byteSym[s[i]]...)
	}
	return string(b)
}

// decodeByteLevel is tokenizers' ByteLevel decoder: each token becomes
// the bytes of its symbols (a token with a rune that is no byte symbol,
// such as an added token "<|終|>", stays as its own UTF-8), and the bytes
// of all the tokens are read as UTF-8 the way Rust's
// String::from_utf8_lossy does.
func decodeByteLevel(toks []string) string {
	var b []byte
	for _, tok := range toks {
		n := len(b)
		for _, r := range tok {
			if r >= rune(len(symByte)) || symByte[r] < 0 {
				b = append(b[:n], tok...)
				break
			}
			b = append(b, byte(symByte[r]))
		}
	}
	return lossyUTF8(b)
}

// lossyUTF8 is Rust's String::from_utf8_lossy: each maximal prefix of a
// well-formed UTF-8 sequence that is cut short, or else each invalid
// byte, becomes one U+FFFD (the Unicode Standard's "substitution of
// maximal subparts", §3.9). Go's strings.ToValidUTF8 would replace a
// whole run of invalid bytes by one.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			n = maximalSubpart(b)
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}

// maximalSubpart returns the length of the invalid UTF-8 at the start of
// b: the longest prefix of a well-formed sequence it starts with (Table
// 3-7 of the Unicode Standard), or 1.
func maximalSubpart(b []byte) int {
	lo, hi := byte(0x80), byte(0xBF) // the range of the second byte
	var need int
	switch c := b[0]; {
	case 0xC2 <= c && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case 0xE1 <= c && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case 0xF1 <= c && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	i := 1
	for ; i <= need && i < len(b) && lo <= b[i] && b[i] <= hi; i++ {
		lo, hi = 0x80, 0xBF
	}
	return i
}

// gpt2Pattern is gpt2Pieces as a sugarme normalizer.Pattern.
type gpt2Pattern struct{}

// FindMatches returns the pieces of inside, all as matches.
func (gpt2Pattern) FindMatches(inside string) []normalizer.OffsetsMatch {
	if inside == "" {
		return []normalizer.OffsetsMatch{{Offsets: []int{0, 0}}}
	}
	var out []normalizer.OffsetsMatch
	gpt2Pieces(inside, func(lo, hi int) {
		out = append(out, normalizer.OffsetsMatch{Offsets: []int{lo, hi}, Match: true})
	})
	return out
}

// byteLevel is a Hugging Face ByteLevel pre-tokenizer for sugarme's
// Tokenizer: it splits as GPT-2 does (when useRegex), then maps each byte
// of a piece to its symbol.
type byteLevel struct {
	addPrefixSpace bool
	useRegex       bool
}

var _ tokenizer.PreTokenizer = (*byteLevel)(nil)

// PreTokenize splits and byte-maps every split that has no tokens yet.
// It is sugarme's pretokenizer.ByteLevel.PreTokenize with gpt2Pattern in
// place of its regular expression, and it honours use_regex.
func (b *byteLevel) PreTokenize(pt *tokenizer.PreTokenizedString) (*tokenizer.PreTokenizedString, error) {
	pt = pt.Split(func(_ int, n *normalizer.NormalizedString) []tokenizer.SplitIdx {
		if b.addPrefixSpace && !strings.HasPrefix(n.GetNormalized(), " ") {
			n = n.Prepend(" ")
		}
		if !b.useRegex {
			return []tokenizer.SplitIdx{{Normalized: n}}
		}
		var out []tokenizer.SplitIdx
		for _, s := range n.Split(gpt2Pattern{}, normalizer.IsolatedBehavior) {
			out = append(out, tokenizer.SplitIdx{Normalized: &s})
		}
		return out
	})
	pt = pt.Normalize(func(n *normalizer.NormalizedString) *normalizer.NormalizedString {
		var changes []normalizer.ChangeMap
		for _, r := range n.GetNormalized() {
			for i, c := range []byte(string(r)) {
				changes = append(changes, normalizer.ChangeMap{RuneVal: byteSym[c], Changes: min(i, 1)})
			}
		}
		return n.Transform(changes, 0)
	})
	return pt, nil
}

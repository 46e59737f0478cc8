package datasets

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/normalizer"
	"github.com/sugarme/tokenizer/pretokenizer"
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
// GPT-2's is Unicode. byteLevel below is sugarme's ByteLevel pre-tokenizer
// with the split done by gpt2Pieces, which follows the regular expression
// exactly; on Opticks it makes sugarme's ids equal Hugging Face's.

// gpt2Pieces calls emit with the byte range of each piece of s, in order,
// as GPT-2's regular expression cuts it. The pieces cover s.
func gpt2Pieces(s string, emit func(lo, hi int)) {
	pos := 0
	for pos < len(s) {
		r, w := utf8.DecodeRuneInString(s[pos:])
		if r == '\'' {
			if n := contraction(s[pos:]); n > 0 {
				emit(pos, pos+n)
				pos += n
				continue
			}
		}
		// " ?\p{L}+", " ?\p{N}+" and " ?[^\s\p{L}\p{N}]+".
		p := pos
		if r == ' ' && pos+1 < len(s) {
			if r2, w2 := utf8.DecodeRuneInString(s[pos+1:]); !unicode.IsSpace(r2) {
				p, r, w = pos+1, r2, w2
			}
		}
		if !unicode.IsSpace(r) {
			class, end := runeClass(r), p+w
			for end < len(s) {
				r, w := utf8.DecodeRuneInString(s[end:])
				if unicode.IsSpace(r) || runeClass(r) != class {
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
			r, w := utf8.DecodeRuneInString(s[end:])
			if !unicode.IsSpace(r) {
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

// runeClass is 0 for letters (\p{L}), 1 for numbers (\p{N}) and 2 for the
// rest; callers have already taken out whitespace.
func runeClass(r rune) int {
	switch {
	case unicode.IsLetter(r):
		return 0
	case unicode.IsNumber(r):
		return 1
	}
	return 2
}

// byteSymbolsOf maps each byte of s to its byte-level symbol ("Ġ" for a
// space, ...).
func byteSymbolsOf(s string) string {
	var sb strings.Builder
	sb.Grow(2 * len(s))
	for i := range len(s) {
		sb.WriteString(pretokenizer.BytesChar[s[i]])
	}
	return sb.String()
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
				changes = append(changes, normalizer.ChangeMap{RuneVal: pretokenizer.BytesChar[c], Changes: min(i, 1)})
			}
		}
		return n.Transform(changes, 0)
	})
	return pt, nil
}

package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// This file holds tokenizers' (v0.23) Split pre-tokenizer
// (src/pre_tokenizers/split.rs, NormalizedString::split in
// src/tokenizer/normalizer.rs) and the pre-tokenizer Sequence of Splits
// and a final ByteLevel that Llama 3 and Qwen2 use:
//
//	"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
//	  {"type": "Split", "pattern": {"Regex": "…"}, "behavior": "Isolated", "invert": false},
//	  {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]}
//
// tokenizers runs a Regex pattern with Oniguruma, a backtracking engine
// with look-ahead; Go's regexp has none. Rather than take a second
// regular-expression engine, zoo matches the patterns real
// tokenizer.json files carry with code written for each, as it already
// does for GPT-2's (gpt2Pieces): time linear in the text by construction,
// no new dependency, no timeout (which would turn a long valid text into
// an error), and the patterns' few subtleties (look-ahead, backtracking
// into \s*, (?i) folding "ſ") worked out once and cross-checked against
// tokenizers on all of Opticks and random texts
// (tools/hftokenizers/llama3.js). Measured once (not a dependency):
// github.com/dlclark/regexp2/v2 v2.13.0, a backtracking engine, finds
// the same matches of Llama 3's pattern on Opticks and on 1 MB of spaces,
// digits, line breaks and text without spaces, also in linear time, but
// 2 to 9 times slower (1 MB of digits: 88 ms against 23 ms). A Split
// with any other regex is refused by name; a String pattern (a literal)
// is run here too.

// The Regex patterns a Split runs here, as tokenizer.json spells them.
const (
	// llama3Pattern is Llama 3's (tiktoken's cl100k_base, GPT-4's).
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// qwen2Pattern is Qwen2's: Llama 3's with single digits.
	qwen2Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// gpt2Regex is GPT-2's, which its ByteLevel pre-tokenizer uses.
	gpt2Regex = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// knownPatterns maps each Regex pattern run here to its matcher, which
// calls emit with the byte range of each match of the pattern in s, in
// order (for these patterns the matches cover s).
var knownPatterns = map[string]func(s string, emit func(lo, hi int)){
	llama3Pattern: func(s string, emit func(lo, hi int)) { cl100kPieces(s, 3, emit) },
	qwen2Pattern:  func(s string, emit func(lo, hi int)) { cl100kPieces(s, 1, emit) },
	gpt2Regex:     gpt2Pieces,
}

// splitBehavior is a Split's "behavior": what becomes of each match.
type splitBehavior int

const (
	splitIsolated           splitBehavior = iota // a piece of its own
	splitRemoved                                 // dropped
	splitMergedWithPrevious                      // joined to the piece before
	splitMergedWithNext                          // joined to the piece after
	splitContiguous                              // consecutive matches joined
)

var splitBehaviors = map[string]splitBehavior{
	"Isolated":           splitIsolated,
	"Removed":            splitRemoved,
	"MergedWithPrevious": splitMergedWithPrevious,
	"MergedWithNext":     splitMergedWithNext,
	"Contiguous":         splitContiguous,
}

// splitPre is tokenizers' Split pre-tokenizer. It is immutable, so safe
// for concurrent use.
type splitPre struct {
	literal  string                                // a String pattern, or ""
	find     func(s string, emit func(lo, hi int)) // a Regex pattern's matcher
	behavior splitBehavior
	invert   bool // the pieces between the matches are the delimiters
}

// parseSplit reads a Split pre-tokenizer. A Regex pattern other than
// those of knownPatterns is an *unsupportedError naming it.
func parseSplit(raw json.RawMessage) (*splitPre, error) {
	var f struct {
		Pattern  replacePattern `json:"pattern"`
		Behavior string         `json:"behavior"`
		Invert   bool           `json:"invert"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf(`pre_tokenizer "Split": %w`, err)
	}
	b, ok := splitBehaviors[f.Behavior]
	if !ok {
		return nil, fmt.Errorf(`pre_tokenizer "Split": behavior %q is none of "Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"`, f.Behavior)
	}
	sp := &splitPre{behavior: b, invert: f.Invert}
	switch {
	case f.Pattern.Regex != nil:
		if sp.find = knownPatterns[*f.Pattern.Regex]; sp.find == nil {
			return nil, &unsupportedError{fmt.Sprintf(`pre_tokenizer "Split" with the Regex %s (zoo runs GPT-2's, Llama 3's and Qwen2's patterns)`, strconv.Quote(*f.Pattern.Regex))}
		}
	case f.Pattern.String == nil:
		return nil, errors.New(`pre_tokenizer "Split": "pattern" is neither {"String": …} nor {"Regex": …}`)
	case *f.Pattern.String == "":
		return nil, &unsupportedError{`pre_tokenizer "Split" with an empty pattern`}
	default:
		sp.literal = *f.Pattern.String
		sp.find = func(s string, emit func(lo, hi int)) {
			for at := 0; ; {
				i := strings.Index(s[at:], sp.literal)
				if i < 0 {
					return
				}
				emit(at+i, at+i+len(sp.literal))
				at += i + len(sp.literal)
			}
		}
	}
	return sp, nil
}

// splitSpan is a stretch of the text: a match of the pattern or a gap
// between matches (match false).
type splitSpan struct {
	lo, hi int
	match  bool
}

// split calls emit with each non-empty piece Split makes of s, in order,
// as tokenizers' NormalizedString::split.
func (sp *splitPre) split(s string, emit func(string) error) error {
	if s == "" {
		return nil
	}
	// find_matches: the matches and the gaps between them, covering s.
	var spans []splitSpan
	prev := 0
	sp.find(s, func(lo, hi int) {
		if lo > prev {
			spans = append(spans, splitSpan{prev, lo, false})
		}
		spans = append(spans, splitSpan{lo, hi, true})
		prev = hi
	})
	if prev < len(s) {
		spans = append(spans, splitSpan{prev, len(s), false})
	}
	if sp.invert {
		for i := range spans {
			spans[i].match = !spans[i].match
		}
	}
	out := spans[:0] // the pieces; in place: each step writes at most where it reads
	switch sp.behavior {
	case splitIsolated:
		out = spans
	case splitRemoved:
		for _, x := range spans {
			if !x.match {
				out = append(out, x)
			}
		}
	case splitContiguous, splitMergedWithPrevious:
		prevMatch := false
		for _, x := range spans {
			join := x.match == prevMatch
			if sp.behavior == splitMergedWithPrevious {
				join = x.match && !prevMatch
			}
			if join && len(out) > 0 {
				out[len(out)-1].hi = x.hi
			} else {
				out = append(out, x)
			}
			prevMatch = x.match
		}
	case splitMergedWithNext:
		// tokenizers folds from the end: a match joins the piece after it
		// unless that piece is a match too.
		prevMatch := false
		n := len(spans)
		for i := n - 1; i >= 0; i-- {
			x := spans[i]
			if x.match && !prevMatch && n < len(spans) {
				spans[n].lo = x.lo
			} else {
				n--
				spans[n] = x
			}
			prevMatch = x.match
		}
		out = spans[n:]
	}
	for _, x := range out {
		if x.hi > x.lo {
			if err := emit(s[x.lo:x.hi]); err != nil {
				return err
			}
		}
	}
	return nil
}

// parsePreSequence reads a Split, or a Sequence of Splits that may end
// with a ByteLevel (Llama 3's and Qwen2's layout), into t.splits and
// t.pre. Another pre-tokenizer in the Sequence, or a Regex not run here,
// is an *unsupportedError naming it.
func (t *hfTokenizer) parsePreSequence(raw json.RawMessage) error {
	var flat []json.RawMessage
	var flatten func(raw json.RawMessage) error
	flatten = func(raw json.RawMessage) error {
		var f struct {
			Type          string            `json:"type"`
			PreTokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return fmt.Errorf("pre_tokenizer: %w", err)
		}
		if f.Type != "Sequence" {
			flat = append(flat, raw)
			return nil
		}
		if f.PreTokenizers == nil {
			return errors.New(`pre_tokenizer "Sequence" has no "pretokenizers"`)
		}
		for _, r := range f.PreTokenizers {
			if err := flatten(r); err != nil {
				return err
			}
		}
		return nil
	}
	if err := flatten(raw); err != nil {
		return err
	}
	if ok, err := t.parseWordsMetaspace(flat); ok || err != nil {
		return err
	}
	var splits []*splitPre
	var pre *byteLevel
	for i, r := range flat {
		var f struct {
			Type           string `json:"type"`
			AddPrefixSpace bool   `json:"add_prefix_space"`
			UseRegex       *bool  `json:"use_regex"` // absent means true
		}
		if err := json.Unmarshal(r, &f); err != nil {
			return fmt.Errorf("pre_tokenizer: %w", err)
		}
		switch {
		case f.Type == "Split":
			sp, err := parseSplit(r)
			if err != nil {
				return err
			}
			splits = append(splits, sp)
		case f.Type == "ByteLevel" && i == len(flat)-1:
			pre = &byteLevel{addPrefixSpace: f.AddPrefixSpace, useRegex: f.UseRegex == nil || *f.UseRegex}
		case f.Type == "ByteLevel":
			return &unsupportedError{`pre_tokenizer "Sequence" with a "ByteLevel" before its last pre-tokenizer`}
		default:
			return &unsupportedError{fmt.Sprintf(`pre_tokenizer "Sequence" holding %q`, f.Type)}
		}
	}
	t.splits, t.pre = splits, pre
	return nil
}

// cl100kPieces calls emit with the byte range of each match in s of
// Llama 3's pattern (maxDigits 3) or Qwen2's (maxDigits 1), in order, as
// Oniguruma finds them: the first alternative that matches at a
// position, each quantifier greedy, backtracking where it must:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)   contractions, any case
//	[^\r\n\p{L}\p{N}]?\p{L}+       letters, after one other character
//	\p{N}{1,3}                     (Qwen2: \p{N}) digits
//	 ?[^\s\p{L}\p{N}]+[\r\n]*      punctuation, then line breaks
//	\s*[\r\n]+                     white space to its last line break
//	\s+(?!\S)                      white space but its last character
//	\s+                            white space
//
// The matches cover s. \s is Unicode White_Space, as in Oniguruma.
func cl100kPieces(s string, maxDigits int, emit func(lo, hi int)) {
	for p := 0; p < len(s); {
		end := cl100kMatch(s, p, maxDigits)
		emit(p, end)
		p = end
	}
}

// cl100kMatch returns the end of the match at p (p < len(s)).
func cl100kMatch(s string, p, maxDigits int) int {
	if s[p] == '\'' {
		if n := contractionFold(s[p+1:]); n > 0 {
			return p + 1 + n
		}
	}
	class, w := classAt(s, p)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if class == classLetter {
		return classRun(s, p+w, classLetter)
	}
	if class != classNumber && s[p] != '\r' && s[p] != '\n' && p+w < len(s) {
		if c, w2 := classAt(s, p+w); c == classLetter {
			return classRun(s, p+w+w2, classLetter)
		}
	}
	// \p{N}{1,3}
	if class == classNumber {
		end := p + w
		for n := 1; n < maxDigits && end < len(s); n++ {
			c, w := classAt(s, end)
			if c != classNumber {
				break
			}
			end += w
		}
		return end
	}
	//  ?[^\s\p{L}\p{N}]+[\r\n]*
	q := p
	if class == classSpace && s[p] == ' ' && p+1 < len(s) {
		if c, _ := classAt(s, p+1); c == classOther {
			q = p + 1
		}
	}
	if class == classOther || q > p {
		end := classRun(s, q, classOther)
		for end < len(s) && (s[end] == '\r' || s[end] == '\n') {
			end++
		}
		return end
	}
	// White space: the run [p, end), last the start of its last
	// character, nl the last line break in it.
	end, last, nl := p, p, -1
	for end < len(s) {
		c, w := classAt(s, end)
		if c != classSpace {
			break
		}
		if s[end] == '\r' || s[end] == '\n' {
			nl = end
		}
		last = end
		end += w
	}
	switch {
	case nl >= 0: // \s*[\r\n]+: \s* gives back up to the last line break
		return nl + 1
	case end == len(s): // \s+(?!\S) at the end of s
		return end
	case last > p: // \s+(?!\S) gives back the character before the \S
		return last
	}
	return end // \s+: one white space character before a \S
}

// classRun returns the end of the run of characters of the class that
// starts at i.
func classRun(s string, i int, class int8) int {
	for i < len(s) {
		c, w := classAt(s, i)
		if c != class {
			break
		}
		i += w
	}
	return i
}

// contractionFold returns the length of the contraction suffix s starts
// with (s t re ve m ll d after the apostrophe), in any case: Oniguruma's
// (?i) folds by Unicode, so "ſ" (U+017F, long s) is an s too.
func contractionFold(s string) int {
	lower := func(i int) (byte, int) {
		if i >= len(s) {
			return 0, 0
		}
		if strings.HasPrefix(s[i:], "ſ") {
			return 's', len("ſ")
		}
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		return c, 1
	}
	c, n := lower(0)
	switch c {
	case 's', 't', 'm', 'd':
		return n
	case 'r', 'v', 'l':
		want := map[byte]byte{'r': 'e', 'v': 'e', 'l': 'l'}[c]
		if c2, n2 := lower(n); c2 == want {
			return n + n2
		}
	}
	return 0
}

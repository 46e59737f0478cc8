package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// vowels are CMUdict's 15 vowel phonemes, the ones that carry a stress
// digit: 0 unstressed, 1 primary, 2 secondary (the dictionary's README).
var vowels = map[string]bool{
	"AA": true, "AE": true, "AH": true, "AO": true, "AW": true, "AY": true, "EH": true, "ER": true,
	"EY": true, "IH": true, "IY": true, "OW": true, "OY": true, "UH": true, "UW": true,
}

// consonants are its 24 other phonemes; with vowels, the 39 of phones.txt.
var consonants = map[string]bool{
	"B": true, "CH": true, "D": true, "DH": true, "F": true, "G": true, "HH": true, "JH": true,
	"K": true, "L": true, "M": true, "N": true, "NG": true, "P": true, "R": true, "S": true,
	"SH": true, "T": true, "TH": true, "V": true, "W": true, "Y": true, "Z": true, "ZH": true,
}

// phoneme checks one ARPAbet symbol of a pronunciation and returns it
// without its stress digit unless keepStress; ok is false for a symbol
// that is not one of the 39 phonemes, with a stress digit (0, 1 or 2)
// only on a vowel.
func phoneme(sym string, keepStress bool) (string, bool) {
	base := sym
	if n := len(sym); n > 1 && sym[n-1] >= '0' && sym[n-1] <= '2' {
		base = sym[:n-1]
		if !vowels[base] {
			return "", false
		}
		if keepStress {
			return sym, true
		}
		return base, true
	}
	if !vowels[base] && !consonants[base] {
		return "", false
	}
	return base, true
}

// options are the command's knobs.
type options struct {
	keepStress bool    // keep the stress digits on vowels
	extra      string  // characters a word may have besides a–z
	test       int     // words in the test set drawn from the dictionary
	testDict   string  // or the file whose words are the test set
	dev        float64 // fraction of the other words in the dev set
	seed       uint64  // of the split
}

// checkExtra rejects extra word characters that would break the TSV or
// the word-level tokenizer's one-token-per-character view: white space,
// controls and invalid UTF-8.
func checkExtra(extra string) error {
	if !utf8.ValidString(extra) {
		return errors.New("-chars is not valid UTF-8")
	}
	for _, r := range extra {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("-chars has %q: white space and control characters cannot be word characters", r)
		}
	}
	return nil
}

// lexicon is what parse keeps of a dictionary: each word's distinct
// pronunciations in file order, and the counts of what it read.
type lexicon struct {
	prons map[string][][]string // lowercased word → pronunciations
	st    stats
}

// stats counts every line parse reads: lines = blank + comments +
// entries, and entries = kept + dropped + duplicates.
type stats struct {
	lines      int
	blank      int
	comments   int // ";;;" or "#" lines (CMUdict 0.7b's header)
	trailing   int // entries with a "# …" comment after the phonemes (cmusphinx's cmudict.dict)
	entries    int // lines with a headword
	variants   int // entries whose headword has a "(N)" variant marker
	kept       int // pronunciations kept
	duplicates int // identical to a kept pronunciation of the same word (after stress removal)
	// dropped counts dropped entries by reason; droppedWords the distinct
	// words among them, and examples the first three, in file order.
	dropped      map[string]int
	droppedWords map[string]map[string]bool
	examples     map[string][]string
}

// Reasons for dropping an entry.
const (
	dropNoPron   = "no pronunciation"
	dropPhoneme  = "a symbol that is not a CMUdict phoneme"
	dropDigit    = "a digit"
	dropNonASCII = "a character outside ASCII"
)

func (s *stats) drop(reason, word string) {
	if s.dropped == nil {
		s.dropped, s.droppedWords, s.examples = map[string]int{}, map[string]map[string]bool{}, map[string][]string{}
	}
	s.dropped[reason]++
	if s.droppedWords[reason] == nil {
		s.droppedWords[reason] = map[string]bool{}
	}
	if !s.droppedWords[reason][word] {
		s.droppedWords[reason][word] = true
		if len(s.examples[reason]) < 3 {
			s.examples[reason] = append(s.examples[reason], word)
		}
	}
}

// maxLine bounds a dictionary line (CMUdict's longest is under 100 bytes).
const maxLine = 1 << 20

// parse reads a CMUdict file: one entry per line, `WORD  P1 P2 …` (0.7b
// and stdlib's copy separate word and phonemes by two spaces, cmusphinx's
// cmudict.dict by one; any white space will do), an alternate
// pronunciation as `WORD(N)  …`, comment lines starting with ";;;" or "#",
// and in cmudict.dict a "# …" comment after the phonemes. Words are
// lowercased; an entry is dropped, and counted, when its word has a
// character other than a–z and opts.extra (digits, "." of abbreviations,
// "_" of multi-word entries, "-", non-ASCII bytes such as stdlib's U+FFFD
// in "DÉJÀ") or its pronunciation a symbol other than the 39 phonemes.
// Stress digits are removed unless opts.keepStress, and a pronunciation
// that then equals an earlier one of the same word is dropped and counted.
// Only a read error or an over-long line is an error.
func parse(r io.Reader, opts options) (*lexicon, error) {
	lex := &lexicon{prons: make(map[string][][]string)}
	st := &lex.st
	allowed := func(r rune) bool { return r >= 'a' && r <= 'z' || strings.ContainsRune(opts.extra, r) }
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		st.lines++
		line := sc.Text()
		t := strings.TrimSpace(line)
		switch {
		case t == "":
			st.blank++
			continue
		case strings.HasPrefix(t, ";;;") || strings.HasPrefix(t, "#"):
			st.comments++
			continue
		}
		st.entries++
		fields := strings.Fields(t)
		if i := slices.IndexFunc(fields, func(f string) bool { return strings.HasPrefix(f, "#") }); i >= 0 {
			fields = fields[:i]
			st.trailing++
		}
		head := fields[0]
		if open := strings.LastIndexByte(head, '('); open > 0 && strings.HasSuffix(head, ")") && isDigits(head[open+1:len(head)-1]) {
			head = head[:open]
			st.variants++
		}
		word := strings.ToLower(head)
		if reason := wordProblem(word, allowed); reason != "" {
			st.drop(reason, word)
			continue
		}
		if len(fields) < 2 {
			st.drop(dropNoPron, word)
			continue
		}
		phones := make([]string, 0, len(fields)-1)
		for _, sym := range fields[1:] {
			p, ok := phoneme(sym, opts.keepStress)
			if !ok {
				break
			}
			phones = append(phones, p)
		}
		if len(phones) < len(fields)-1 {
			st.drop(dropPhoneme, word)
			continue
		}
		if slices.ContainsFunc(lex.prons[word], func(p []string) bool { return slices.Equal(p, phones) }) {
			st.duplicates++
			continue
		}
		lex.prons[word] = append(lex.prons[word], phones)
		st.kept++
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d bytes: not a pronouncing dictionary", st.lines+1, maxLine)
		}
		return nil, fmt.Errorf("line %d: %w", st.lines+1, err)
	}
	return lex, nil
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// wordProblem returns why a lowercased word is dropped, or "" to keep it.
func wordProblem(word string, allowed func(rune) bool) string {
	for _, r := range word {
		switch {
		case allowed(r):
		case r >= utf8.RuneSelf || r == utf8.RuneError:
			return dropNonASCII
		case r >= '0' && r <= '9':
			return dropDigit
		default:
			return fmt.Sprintf("%q", r)
		}
	}
	if !utf8.ValidString(word) {
		return dropNonASCII
	}
	return ""
}

// words returns the lexicon's words in byte order.
func (l *lexicon) words() []string {
	return slices.Sorted(maps.Keys(l.prons))
}

// split divides words by word, so that all pronunciations of a word fall
// on one side: each word is ranked by the SHA-256 of the seed (8 bytes,
// little-endian) followed by the word, the first opts.test words are the
// test set, the next round(opts.dev × the rest) the dev set, and the rest
// the training set. A word's side depends only on the seed and on its
// rank among the words, not on Go's random number generators, whose
// streams may change between releases. Each side is returned in byte
// order.
func split(words []string, opts options) (train, dev, test []string, err error) {
	n := len(words)
	if opts.test < 0 || !(opts.dev >= 0 && opts.dev < 1) {
		return nil, nil, nil, fmt.Errorf("-test %d must be at least 0 and -dev %g in [0, 1)", opts.test, opts.dev)
	}
	if opts.test >= n {
		return nil, nil, nil, fmt.Errorf("-test %d words leaves none of the %d words for training", opts.test, n)
	}
	nDev := int(math.Round(opts.dev * float64(n-opts.test)))
	if opts.test+nDev >= n {
		return nil, nil, nil, fmt.Errorf("-test %d and -dev %g leave none of the %d words for training", opts.test, opts.dev, n)
	}
	type ranked struct {
		key  uint64
		word string
	}
	rs := make([]ranked, n)
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], opts.seed)
	for i, w := range words {
		h := sha256.New()
		h.Write(seed[:])
		h.Write([]byte(w))
		rs[i] = ranked{binary.BigEndian.Uint64(h.Sum(nil)), w}
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if a.key != b.key {
			if a.key < b.key {
				return -1
			}
			return 1
		}
		return strings.Compare(a.word, b.word)
	})
	side := func(rs []ranked) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.word
		}
		slices.Sort(out)
		return out
	}
	return side(rs[opts.test+nDev:]), side(rs[opts.test : opts.test+nDev]), side(rs[:opts.test]), nil
}

// writeTSV writes one line per pronunciation of each word, in the order
// given: the word's characters separated by spaces, a tab, the phonemes
// separated by spaces ("c a t\tK AE T"). It returns the number of lines.
func writeTSV(w io.Writer, words []string, lex *lexicon) (int, error) {
	bw := bufio.NewWriter(w)
	lines := 0
	var chars []string
	for _, word := range words {
		chars = chars[:0]
		for _, r := range word {
			chars = append(chars, string(r))
		}
		src := strings.Join(chars, " ")
		for _, p := range lex.prons[word] {
			if _, err := fmt.Fprintf(bw, "%s\t%s\n", src, strings.Join(p, " ")); err != nil {
				return lines, err
			}
			lines++
		}
	}
	return lines, bw.Flush()
}

// summary describes the lexicon for standard error: what was read, kept
// and dropped, pronunciations per word, and the phoneme and character
// inventories.
func (l *lexicon) summary(keepStress bool) string {
	st := l.st
	var b strings.Builder
	fmt.Fprintf(&b, "%d lines: %d entries (%d marked as alternates \"(N)\", %d with a trailing comment), %d comment lines, %d blank\n",
		st.lines, st.entries, st.variants, st.trailing, st.comments, st.blank)
	perWord := map[int]int{}
	phones := map[string]int{}
	chars := map[rune]int{}
	for w, ps := range l.prons {
		perWord[min(len(ps), 4)]++
		for _, p := range ps {
			for _, ph := range p {
				phones[ph]++
			}
		}
		for _, r := range w {
			chars[r]++
		}
	}
	stress := "stress removed"
	if keepStress {
		stress = "stress kept"
	}
	fmt.Fprintf(&b, "kept %d words with %d pronunciations (%s): %d words with 1, %d with 2, %d with 3, %d with 4 or more\n",
		len(l.prons), st.kept, stress, perWord[1], perWord[2], perWord[3], perWord[4])
	if st.duplicates > 0 {
		fmt.Fprintf(&b, "dropped %d pronunciations equal to another of the same word (%s)\n", st.duplicates, stress)
	}
	reasons := slices.SortedFunc(maps.Keys(st.dropped), func(a, c string) int {
		if d := st.dropped[c] - st.dropped[a]; d != 0 {
			return d
		}
		return strings.Compare(a, c)
	})
	total, words := 0, map[string]bool{}
	for _, r := range reasons {
		total += st.dropped[r]
		for w := range st.droppedWords[r] {
			words[w] = true
		}
	}
	if total > 0 {
		fmt.Fprintf(&b, "dropped %d entries of %d words:", total, len(words))
		for i, r := range reasons {
			sep := ","
			if i == 0 {
				sep = ""
			}
			ex := make([]string, len(st.examples[r]))
			for j, w := range st.examples[r] {
				ex[j] = strconv.QuoteToASCII(w)
			}
			fmt.Fprintf(&b, "%s %d entries of %d words with %s (%s)", sep, st.dropped[r], len(st.droppedWords[r]), r, strings.Join(ex, ", "))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%d phonemes: %s\n", len(phones), strings.Join(slices.Sorted(maps.Keys(phones)), " "))
	cs := slices.Sorted(maps.Keys(chars))
	fmt.Fprintf(&b, "%d characters: %s\n", len(cs), string(cs))
	return b.String()
}

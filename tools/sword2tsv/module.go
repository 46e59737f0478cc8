package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// verse is one verse entry of a module with its markup stripped.
type verse struct {
	key verseKey
	entryText
}

// module is a Bible module's verses (verse numbers from 1; the book and
// chapter heading entries are kept only for their headings).
type module struct {
	name   string
	verses []verse
	index  map[verseKey]int
	// chapterHeading is the heading text of each chapter's heading entry
	// (verse 0), by that entry's key.
	chapterHeading map[verseKey]string
	// unknown counts the elements the stripper does not know.
	unknown map[string]int
	// repairs lists the markup repairs (see entryText.repairs) by verse.
	repairs []string
	// capsOpenings says the module writes the first word of each chapter
	// in capitals, as RV1909 does ("EN el principio crió Dios"):
	// capsOpened of the openings chapters open with a word in capitals.
	capsOpenings         bool
	openings, capsOpened int
	// capitalised holds the lower-case forms of the words the module
	// mostly writes capitalised inside a sentence ("jehová"), for
	// recasing chapter openings.
	capitalised map[string]bool
}

// loadModule reads and strips the module src (an IMP file or a SWORD
// module name).
func loadModule(src string) (*module, error) {
	entries, err := loadEntries(src)
	if err != nil {
		return nil, err
	}
	return newModule(src, entries)
}

// newModule strips the markup of a module's entries.
func newModule(name string, entries []impEntry) (*module, error) {
	m := &module{
		name:           name,
		index:          map[verseKey]int{},
		chapterHeading: map[verseKey]string{},
		unknown:        map[string]int{},
	}
	for _, e := range entries {
		t, err := stripOSIS(e.raw, m.unknown)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d (%s): %w", name, e.line+1, e.key, err)
		}
		for _, r := range t.repairs {
			m.repairs = append(m.repairs, e.key.String()+": "+r)
		}
		if e.key.verse == 0 {
			if t.heading != "" {
				m.chapterHeading[e.key] = t.heading
			}
			continue
		}
		m.index[e.key] = len(m.verses)
		m.verses = append(m.verses, verse{key: e.key, entryText: t})
	}
	if len(m.verses) == 0 {
		return nil, fmt.Errorf("%s: no verses (only book and chapter headings)", name)
	}
	m.learnCasing()
	return m, nil
}

// lookup returns the verse with key k, or nil.
func (m *module) lookup(k verseKey) *verse {
	i, ok := m.index[k]
	if !ok {
		return nil
	}
	return &m.verses[i]
}

// learnCasing decides capsOpenings (more than half of the chapters open
// with a word in capitals) and counts how the module writes each word
// inside sentences.
func (m *module) learnCasing() {
	lower, upper := map[string]int{}, map[string]int{}
	for _, v := range m.verses {
		if v.key.verse == 1 {
			m.openings++
			if capsOpening(strings.Fields(v.text)) {
				m.capsOpened++
			}
		}
		toks := strings.Fields(v.text)
		for i, tok := range toks {
			core := wordCore(tok)
			if core == "" || isCapsWord(core) || sentenceInitial(toks, i) {
				continue
			}
			r, _ := utf8.DecodeRuneInString(core)
			if unicode.IsUpper(r) {
				upper[strings.ToLower(core)]++
			} else {
				lower[strings.ToLower(core)]++
			}
		}
	}
	m.capsOpenings = m.capsOpened*2 > m.openings
	m.capitalised = map[string]bool{}
	for w, n := range upper {
		if n > lower[w] {
			m.capitalised[w] = true
		}
	}
}

// capsOpening reports whether toks open with a word in capitals, perhaps
// after a one-letter word ("EN el principio", "Y FUERON acabados").
func capsOpening(toks []string) bool {
	switch {
	case len(toks) > 0 && isCapsWord(toks[0]):
		return true
	case len(toks) > 1 && isSingleCapital(toks[0]) && isCapsWord(toks[1]):
		return true
	}
	return false
}

// wordCore returns tok without the punctuation around its letters
// ("¡OH," is "OH").
func wordCore(tok string) string {
	return strings.TrimFunc(tok, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsMark(r) })
}

// isCapsWord reports whether the letters of tok are all capitals and there
// are at least two of them ("OH", "¿POR", "JEHOVÁ", not "A" or "Él").
func isCapsWord(tok string) bool {
	n := 0
	for _, r := range tok {
		if unicode.IsLetter(r) {
			if !unicode.IsUpper(r) {
				return false
			}
			n++
		}
	}
	return n >= 2
}

// sentenceInitial reports whether toks[i] starts a sentence: it is the
// first token, the previous one ends a sentence or clause (. ! ? : ;) or
// has no letters, or it opens with ¡ ¿ or a quotation mark.
func sentenceInitial(toks []string, i int) bool {
	if i == 0 {
		return true
	}
	if r, _ := utf8.DecodeRuneInString(toks[i]); strings.ContainsRune("¡¿“‘\"'«(", r) {
		return true
	}
	prev := toks[i-1]
	if wordCore(prev) == "" {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(strings.TrimRight(prev, "”’\"'»)"))
	return strings.ContainsRune(".!?:;", r)
}

// recaseOpening rewrites the first run of words in capitals in text, a
// chapter's first verse, in the module's usual casing: "EN el principio"
// becomes "En el principio", "¡OH Jehová" "¡Oh Jehová", "YO DIJE:" "Yo
// dije:", "A JEHOVÁ llamé" "A Jehová llamé", "Y Á SUS discípulos" "Y á
// sus discípulos", "ALEPH. BIENAVENTURADOS" "Aleph. Bienaventurados". It
// reports whether it changed anything.
func (m *module) recaseOpening(text string) (string, bool) {
	toks := strings.Fields(text)
	start := -1
	for i, t := range toks {
		if isCapsWord(t) {
			start = i
			break
		}
	}
	if start < 0 {
		return text, false
	}
	if start > 1 && isSingleCapital(toks[start-1]) && !sentenceInitial(toks, start-1) {
		start-- // "Y Á SUS discípulos": "Á" is "á"
	}
	for i := start; i < len(toks) && (i == start || isCapsWord(toks[i])); i++ {
		core := wordCore(toks[i])
		lower := strings.ToLower(core)
		if m.capitalised[lower] || sentenceInitial(toks, i) {
			r, n := utf8.DecodeRuneInString(lower)
			lower = string(unicode.ToUpper(r)) + lower[n:]
		}
		toks[i] = strings.Replace(toks[i], core, lower, 1)
	}
	return strings.Join(toks, " "), true
}

// splitCapsTitle finds an unmarked psalm title in text: the title is the
// text before the first word in capitals (with a one-letter capital word
// just before it: "A TI", "A JEHOVÁ"), since RV1909 writes the first word
// of each psalm in capitals and its titles in ordinary case. It returns
// false when there is no such word or no text before it.
func splitCapsTitle(text string) (title, body string, ok bool) {
	toks := strings.Fields(text)
	for i, t := range toks {
		if !isCapsWord(t) {
			continue
		}
		if i > 0 && isSingleCapital(toks[i-1]) {
			i--
		}
		if i == 0 {
			return "", text, false
		}
		return strings.Join(toks[:i], " "), strings.Join(toks[i:], " "), true
	}
	return "", text, false
}

// isSingleCapital reports whether tok is one capital letter ("A", "Y")
// with no punctuation after it.
func isSingleCapital(tok string) bool {
	r, n := utf8.DecodeRuneInString(tok)
	return n == len(tok) && unicode.IsUpper(r)
}

// isAcrostic reports whether a heading is an acrostic letter name, as the
// KJV's Psalm 119 headings are ("א ALEPH."): exactly one word with cased
// letters or digits, all in capitals.
func isAcrostic(heading string) bool {
	words := 0
	caps := false
	for _, tok := range strings.Fields(heading) {
		cased := strings.IndexFunc(tok, func(r rune) bool {
			return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsDigit(r)
		}) >= 0
		if !cased {
			continue // Hebrew letters, punctuation
		}
		words++
		caps = isCapsWord(tok) && strings.IndexFunc(tok, unicode.IsDigit) < 0
	}
	return words == 1 && caps
}

// stripLeadingCapsWord removes an unmarked acrostic letter name from the
// start of text ("ALEPH. BIENAVENTURADOS los", "BETH ¿Con qué"). It
// reports false when text does not start with a word in capitals followed
// by more text.
func stripLeadingCapsWord(text string) (string, bool) {
	first, rest, ok := strings.Cut(text, " ")
	if !ok || !isCapsWord(first) || rest == "" {
		return text, false
	}
	return rest, true
}

// isAmen reports whether tok is "Amen." (or "Amén." and the like).
func isAmen(tok string) bool {
	l := strings.ToLower(wordCore(tok))
	return (l == "amen" || l == "amén") && strings.ContainsAny(tok, ".!")
}

// endsWithAmen reports whether the last word of text is "Amen.".
func endsWithAmen(text string) bool {
	toks := strings.Fields(text)
	return len(toks) > 0 && isAmen(toks[len(toks)-1])
}

// cutSubscription removes an unmarked subscription from the end of text,
// the text after its last "Amen." (RV1909's "... Amén. Fué escrita de
// Corinto á los Romanos ..."). It reports false when nothing follows the
// last "Amen." or there is none.
func cutSubscription(text string) (string, bool) {
	toks := strings.Fields(text)
	for i := len(toks) - 1; i >= 0; i-- {
		if isAmen(toks[i]) {
			if i == len(toks)-1 {
				return text, false
			}
			return strings.Join(toks[:i+1], " "), true
		}
	}
	return text, false
}

// jaccard returns |a∩b|/|a∪b| of two sorted sets.
func jaccard(a, b []string) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	common := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			common++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(common) / float64(len(a)+len(b)-common)
}

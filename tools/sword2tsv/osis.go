package main

import (
	"errors"
	"fmt"
	"html"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// entryText is one IMP entry with its OSIS markup stripped.
type entryText struct {
	// text is the plain text: canonical titles, notes and headings
	// removed, entities decoded, whitespace collapsed to single spaces,
	// no tabs or newlines.
	text string
	// title is the text of the canonical titles (<title canonical="true">,
	// the psalm superscriptions), which text does not contain.
	title string
	// heading is the text of the non-canonical titles (section headings,
	// Psalm 119's letter names, the subscriptions of Paul's letters).
	// headingFirst says one came before any text, headingLast that one
	// came after all of it.
	heading                   string
	headingFirst, headingLast bool
	// strongs are the Strong's numbers of the <w lemma="strong:..."> words
	// outside notes, sorted and without repeats, as "H430" or "G2316".
	strongs []string
	// repairs describes the elements closed implicitly: by the end tag of
	// an element around them, or at the end of the entry.
	repairs []string
}

// elementAction is what the stripper does with an element.
type elementAction int

const (
	// keepInline keeps the text and adds no word boundary: <w>,
	// <transChange>, <divineName>, <q>, <seg>, <foreign>, <name>, <hi>,
	// <reference> (outside notes it is part of the verse), ...
	keepInline elementAction = iota
	// keepBlock keeps the text and puts a word boundary before and after:
	// the structural <div>, <chapter>, <p>, <lg>, <l>, <lb>, <list>,
	// <item>, <milestone>, ...
	keepBlock
	// dropContent removes the element with its content: <note>, <speaker>
	// (Song of Solomon's speaker labels), <figure>, and the non-canonical
	// <title>s, which are headings.
	dropContent
	// canonicalTitle moves the content to entryText.title.
	canonicalTitle
)

// inlineElements are the OSIS elements whose text is verse text and whose
// tags are not word boundaries (KJV's "<w>with tear</w>s").
var inlineElements = map[string]bool{
	"w": true, "transChange": true, "divineName": true, "q": true, "seg": true,
	"foreign": true, "name": true, "hi": true, "rdg": true, "catchWord": true,
	"abbr": true, "mentioned": true, "inscription": true, "a": true,
	"reference": true, "date": true, "rb": true,
}

// blockElements are the structural OSIS elements: their tags separate
// words, their text (if any) is kept.
var blockElements = map[string]bool{
	"div": true, "chapter": true, "verse": true, "p": true, "lg": true,
	"l": true, "lb": true, "list": true, "item": true, "label": true,
	"milestone": true, "table": true, "row": true, "cell": true,
	"closer": true, "salute": true, "signed": true, "caption": true, "head": true,
}

// droppedElements are removed with their content.
var droppedElements = map[string]bool{
	"note": true, "speaker": true, "figure": true, "index": true,
}

// suppressedDivTypes are the <div type=...> whose content is not verse
// text. WEB appends its glossary to Revelation 22:21 inside
// <div type="glossary"> and <div type="introduction"> milestones.
var suppressedDivTypes = map[string]bool{
	"glossary": true, "introduction": true, "x-introduction": true,
	"preface": true, "coverPage": true, "titlePage": true,
}

// classify returns the action for a start tag and whether the element is
// one this tool knows.
func classify(t tag) (elementAction, bool) {
	switch {
	case t.name == "title":
		if t.attr("canonical") == "true" {
			return canonicalTitle, true
		}
		return dropContent, true
	case t.name == "div" && suppressedDivTypes[t.attr("type")]:
		return dropContent, true
	case inlineElements[t.name]:
		return keepInline, true
	case blockElements[t.name]:
		return keepBlock, true
	case droppedElements[t.name]:
		return dropContent, true
	}
	return keepInline, false
}

// tag is one parsed start, end or empty-element tag.
type tag struct {
	name        string
	end         bool // </name>
	selfClosing bool // <name .../>
	attrs       []attribute
}

type attribute struct{ key, value string }

// attr returns the value of the attribute key, or "".
func (t tag) attr(key string) string {
	for _, a := range t.attrs {
		if a.key == key {
			return a.value
		}
	}
	return ""
}

// parseTag parses the tag starting at s[0] == '<'. It returns the tag and
// its length; skip is true for comments, processing instructions and
// declarations, which carry no text.
func parseTag(s string) (t tag, n int, skip bool, err error) {
	if strings.HasPrefix(s, "<!--") {
		end := strings.Index(s[4:], "-->")
		if end < 0 {
			return tag{}, 0, false, errors.New("unterminated comment")
		}
		return tag{}, 4 + end + 3, true, nil
	}
	// Find the closing '>' outside quoted attribute values.
	var quote byte
	end := -1
	for i := 1; i < len(s) && end < 0; i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			end = i
		case c == '<':
			return tag{}, 0, false, fmt.Errorf("%q is not a tag", clip(s[:i+1]))
		}
	}
	if end < 0 {
		return tag{}, 0, false, fmt.Errorf("unterminated tag %q", clip(s))
	}
	n = end + 1
	body := s[1:end]
	if strings.HasPrefix(body, "?") || strings.HasPrefix(body, "!") {
		return tag{}, n, true, nil
	}
	if strings.HasPrefix(body, "/") {
		t.end = true
		body = body[1:]
	} else if strings.HasSuffix(body, "/") {
		t.selfClosing = true
		body = body[:len(body)-1]
	}
	i := 0
	for i < len(body) && isNameByte(body[i], i == 0) {
		i++
	}
	if i == 0 {
		return tag{}, 0, false, fmt.Errorf("%q is not a tag", clip(s[:n]))
	}
	t.name = body[:i]
	rest := body[i:]
	if t.end {
		if strings.TrimSpace(rest) != "" {
			return tag{}, 0, false, fmt.Errorf("end tag %q has attributes", clip(s[:n]))
		}
		return t, n, false, nil
	}
	for {
		rest = strings.TrimLeft(rest, " \t\r\n")
		if rest == "" {
			return t, n, false, nil
		}
		j := 0
		for j < len(rest) && isNameByte(rest[j], j == 0) {
			j++
		}
		key := rest[:j]
		rest = strings.TrimLeft(rest[j:], " \t\r\n")
		if key == "" || !strings.HasPrefix(rest, "=") {
			return tag{}, 0, false, fmt.Errorf("malformed attribute in %q", clip(s[:n]))
		}
		rest = strings.TrimLeft(rest[1:], " \t\r\n")
		if rest == "" || (rest[0] != '"' && rest[0] != '\'') {
			return tag{}, 0, false, fmt.Errorf("unquoted attribute %s in %q", key, clip(s[:n]))
		}
		q := rest[0]
		close := strings.IndexByte(rest[1:], q)
		if close < 0 {
			return tag{}, 0, false, fmt.Errorf("unterminated attribute %s in %q", key, clip(s[:n]))
		}
		t.attrs = append(t.attrs, attribute{key, html.UnescapeString(rest[1 : 1+close])})
		rest = rest[1+close+1:]
	}
}

// isNameByte reports whether c may be in an XML name (ASCII only: OSIS
// names are ASCII).
func isNameByte(c byte, first bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == ':':
		return true
	case c >= '0' && c <= '9', c == '-', c == '.':
		return !first
	}
	return false
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// frame is an open element.
type frame struct {
	name   string
	action elementAction
	marker string // <q marker="...">: printed at both ends
}

// stripper turns one entry's OSIS into plain text.
type stripper struct {
	out, title, heading strings.Builder
	stack               []frame
	dropDepth           int             // open dropContent elements
	titleDepth          int             // open canonical titles
	suppressed          map[string]bool // open suppressed <div sID=...> milestones
	boundary            bool            // a word boundary before the next text
	softBoundary        bool            // a boundary only between two word characters
	afterWordEnd        bool            // the last token was </w> or </transChange>, no text since
	headingOpen         bool            // a heading started after text, no text since
	res                 entryText
	strongs             map[string]bool
	unknown             map[string]int // elements classify does not know, by name
}

// stripOSIS strips the OSIS markup of one IMP entry; see entryText for
// the result. unknown, when not nil, counts the elements this tool does
// not know (their text is kept, as for inline elements). Malformed markup
// (a tag that does not parse) is an error, except a tag cut off by the
// end of the entry, which is dropped; that, elements left open, end tags
// without start tags and USFM markers left in the text are repaired and
// listed in repairs.
func stripOSIS(raw string, unknown map[string]int) (entryText, error) {
	st := &stripper{unknown: unknown}
	if err := st.run(raw); err != nil {
		return entryText{}, err
	}
	st.res.text = normalizeSpace(st.out.String())
	st.res.title = normalizeSpace(st.title.String())
	st.res.heading = normalizeSpace(st.heading.String())
	for s := range st.strongs {
		st.res.strongs = append(st.res.strongs, s)
	}
	sort.Strings(st.res.strongs)
	return st.res, nil
}

func (st *stripper) run(s string) error {
	for len(s) > 0 {
		lt := strings.IndexByte(s, '<')
		if lt != 0 {
			text := s
			if lt > 0 {
				text = s[:lt]
			}
			st.text(html.UnescapeString(st.stripUSFM(text)))
			if lt < 0 {
				break
			}
			s = s[lt:]
		}
		t, n, skip, err := parseTag(s)
		if err != nil {
			if !strings.ContainsAny(s[1:], "<>") {
				// The entry ends inside a tag: it was cut short (WEB's
				// 60,030-byte Hosea 0:0 ends in "<d").
				st.res.repairs = append(st.res.repairs, fmt.Sprintf("entry cut short in a tag: %q dropped", clip(s)))
				break
			}
			return err
		}
		if !skip {
			if err := st.tag(t, s[n:]); err != nil {
				return err
			}
		}
		s = s[n:]
	}
	for len(st.stack) > 0 {
		st.res.repairs = append(st.res.repairs, fmt.Sprintf("<%s> not closed", st.stack[len(st.stack)-1].name))
		st.close()
	}
	if st.headingOpen {
		st.res.headingLast = true
	}
	return nil
}

// text handles a run of decoded text.
func (st *stripper) text(s string) {
	if s == "" {
		return
	}
	switch {
	case st.dropDepth > 0 || len(st.suppressed) > 0:
		if len(st.suppressed) == 0 && st.titleDepth == 0 && st.inHeading() {
			st.heading.WriteString(s)
		}
		return
	case st.titleDepth > 0:
		st.title.WriteString(s)
		return
	}
	if strings.TrimSpace(s) == "" {
		// Whitespace between tags: a boundary, not text.
		st.boundary = true
		st.afterWordEnd = false
		return
	}
	st.headingOpen = false
	st.afterWordEnd = false
	if st.boundary {
		st.out.WriteByte(' ')
	} else if st.softBoundary && endsWithWordChar(st.out.String()) && startsWithWordChar(s) {
		st.out.WriteByte(' ')
	}
	st.boundary, st.softBoundary = false, false
	st.out.WriteString(s)
}

// inHeading reports whether the innermost dropped element is a heading
// (a non-canonical title) rather than a note inside one.
func (st *stripper) inHeading() bool {
	for i := len(st.stack) - 1; i >= 0; i-- {
		if st.stack[i].action == dropContent {
			return st.stack[i].name == "title"
		}
	}
	return false
}

// tag handles one tag; rest is the input after it.
func (st *stripper) tag(t tag, rest string) error {
	join := st.afterWordEnd
	st.afterWordEnd = false
	if t.end {
		return st.endTag(t)
	}
	action, known := classify(t)
	if !known && st.unknown != nil {
		st.unknown[t.name]++
	}
	if t.name == "w" && st.dropDepth == 0 {
		st.addStrongs(t.attr("lemma"))
	}
	if t.selfClosing {
		st.milestone(t, action)
		return nil
	}
	if join {
		st.wordJoin(t, rest)
	}
	f := frame{name: t.name, action: action}
	switch action {
	case keepBlock:
		st.boundary = true
	case dropContent:
		if st.dropDepth == 0 && t.name == "title" && len(st.suppressed) == 0 && st.titleDepth == 0 {
			if strings.TrimSpace(st.out.String()) == "" {
				st.res.headingFirst = true
			} else {
				st.headingOpen = true
			}
			if st.heading.Len() > 0 {
				st.heading.WriteByte(' ')
			}
		}
		st.dropDepth++
	case canonicalTitle:
		st.titleDepth++
		if st.title.Len() > 0 {
			st.title.WriteByte(' ')
		}
	case keepInline:
		if t.name == "q" {
			f.marker = t.attr("marker")
			st.text(f.marker)
		}
	}
	st.stack = append(st.stack, f)
	return nil
}

// wordJoin decides whether two word elements with nothing between them,
// </w><transChange> or </transChange><w>, are one word or two. RV1909
// writes both: "siempre</w><transChange>es</transChange><w>su" is
// "siempre es su", "sáca</w><transChange>lo</transChange>" is "sácalo".
// They are two words unless the second is an enclitic pronoun after a
// verb (see encliticJoins).
func (st *stripper) wordJoin(t tag, rest string) {
	if t.name != "w" && t.name != "transChange" {
		return
	}
	if st.dropDepth > 0 || st.titleDepth > 0 || len(st.suppressed) > 0 {
		return
	}
	content := rest
	if i := strings.IndexByte(rest, '<'); i >= 0 {
		content = rest[:i]
	}
	if strings.HasPrefix(rest[len(content):], "</"+t.name+">") && encliticJoins(lastWord(st.out.String()), content) {
		return
	}
	st.boundary = true
}

// milestone handles an empty element.
func (st *stripper) milestone(t tag, action elementAction) {
	switch {
	case t.name == "div" && suppressedDivTypes[t.attr("type")]:
		if id := t.attr("sID"); id != "" {
			if st.suppressed == nil {
				st.suppressed = map[string]bool{}
			}
			st.suppressed[id] = true
		}
		st.boundary = true
	case t.name == "div" && t.attr("eID") != "" && st.suppressed[t.attr("eID")]:
		delete(st.suppressed, t.attr("eID"))
		st.boundary = true
	case t.name == "q":
		st.text(t.attr("marker"))
	case action == keepBlock || action == dropContent || action == canonicalTitle:
		st.boundary = true
	}
}

// endTag closes the innermost element with t's name. Elements left open
// inside it are closed too, and that is recorded as a repair (the KJV's
// note on Exodus 6:2 leaves a <divineName> open); an end tag without a
// start tag is ignored and recorded (the KJV's "\\nd LORD</divineName>").
func (st *stripper) endTag(t tag) error {
	i := len(st.stack) - 1
	for i >= 0 && st.stack[i].name != t.name {
		i--
	}
	if i < 0 {
		st.res.repairs = append(st.res.repairs, fmt.Sprintf("</%s> without <%s> ignored", t.name, t.name))
		return nil
	}
	for len(st.stack)-1 > i {
		f := st.stack[len(st.stack)-1]
		st.res.repairs = append(st.res.repairs, fmt.Sprintf("</%s> closes <%s>", t.name, f.name))
		st.close()
	}
	st.close()
	return nil
}

// close closes the innermost element.
func (st *stripper) close() {
	f := st.stack[len(st.stack)-1]
	st.stack = st.stack[:len(st.stack)-1]
	switch f.action {
	case keepBlock:
		st.boundary = true
	case dropContent:
		st.dropDepth--
		if st.dropDepth == 0 {
			// A note sits against the word it annotates: "LORD<note>…</note>:"
			// is "LORD:", but WEB's "at<note>…</note>Carnaim" is two words.
			st.softBoundary = true
		}
	case canonicalTitle:
		st.titleDepth--
		st.boundary = true
	case keepInline:
		if f.marker != "" {
			st.text(f.marker)
		}
		st.afterWordEnd = f.name == "w" || f.name == "transChange"
	}
}

// addStrongs adds the Strong's numbers of a lemma attribute such as
// "strong:H0430" or "strong:H4905 H7919" (leading zeros dropped).
func (st *stripper) addStrongs(lemma string) {
	for _, f := range strings.Fields(lemma) {
		f = strings.TrimPrefix(f, "strong:")
		if len(f) < 2 || (f[0] != 'H' && f[0] != 'G') {
			continue
		}
		digits := strings.TrimLeft(f[1:], "0")
		n := 0
		for n < len(digits) && digits[n] >= '0' && digits[n] <= '9' {
			n++
		}
		if n == 0 {
			continue
		}
		if st.strongs == nil {
			st.strongs = map[string]bool{}
		}
		st.strongs[f[:1]+digits[:n]] = true
	}
}

// normalizeSpace collapses runs of white space (tabs, newlines and
// Unicode spaces included) to one space, trims the ends, drops control
// characters and KJV's paragraph signs (¶), and replaces invalid UTF-8.
func normalizeSpace(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '¶':
			return ' '
		case unicode.IsSpace(r):
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// isWordRune reports whether r is a letter, mark or digit.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r)
}

func endsWithWordChar(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isWordRune(r)
}

func startsWithWordChar(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isWordRune(r)
}

// lastWord returns the letters at the end of s.
func lastWord(s string) string {
	i := len(s)
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		if !unicode.IsLetter(r) && !unicode.IsMark(r) {
			break
		}
		i -= n
	}
	return s[i:]
}

// clitics are Spanish's unstressed object pronouns, which RV1909's
// <transChange> adds to the end of verbs.
var clitics = map[string]bool{
	"me": true, "te": true, "se": true, "nos": true, "os": true,
	"lo": true, "la": true, "le": true, "los": true, "las": true, "les": true,
}

// shortVerbs are the one-syllable Spanish imperatives and preterites that
// take enclitics in RV1909 ("di|les", "haz|lo", "vi|lo").
var shortVerbs = map[string]bool{
	"di": true, "dí": true, "da": true, "haz": true, "vi": true, "he": true,
	"ve": true, "pon": true, "ten": true, "sal": true, "ven": true,
}

// notVerbs are the accented words before a pronoun in RV1909 that are not
// verbs ("cuánto nos ayudó", "Josué los circuncidó").
var notVerbs = map[string]bool{"cuánto": true, "jehová": true, "josué": true}

// encliticJoins reports whether the element text next, written against
// the word prev with no space, is an enclitic pronoun of prev: next is a
// clitic and prev looks like a verb, either an infinitive or plural
// imperative (ends in r or d), one of shortVerbs, or a word with a
// written accent, which RV1909 keeps on verbs that take enclitics
// ("sáca|lo", "oyéndo|lo", "dínos|lo"). In RV1909, 108 of the 301
// "</w><transChange>" joins add a clitic: this joins 96 (all verbs, read
// one by one) and keeps 12 apart ("no lo", "Josué los", "os lo").
func encliticJoins(prev, next string) bool {
	if !clitics[next] || prev == "" {
		return false
	}
	p := strings.ToLower(prev)
	switch {
	case notVerbs[p]:
		return false
	case shortVerbs[p], strings.HasSuffix(p, "r"), strings.HasSuffix(p, "d"):
		return true
	}
	return strings.ContainsAny(p, "áéíóú")
}

// stripUSFM removes the USFM character markers that the KJV module's
// conversion left in the text, "\\nd " opening a divine name (closed by an
// unmatched </divineName>) and "\\+nd*" closing one, and records them as
// repairs: a backslash, an optional +, lower-case letters and digits, and
// then * (a closer) or one space (an opener).
func (st *stripper) stripUSFM(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '\\')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		j := i + 1
		if j < len(s) && s[j] == '+' {
			j++
		}
		k := j
		for k < len(s) && (s[k] >= 'a' && s[k] <= 'z' || k > j && s[k] >= '0' && s[k] <= '9') {
			k++
		}
		if k == j || k == len(s) || (s[k] != '*' && s[k] != ' ') {
			b.WriteByte('\\') // not a marker: keep the backslash
			s = s[i+1:]
			continue
		}
		st.res.repairs = append(st.res.repairs, fmt.Sprintf("USFM marker %q removed", s[i:k+1]))
		s = s[k+1:]
	}
}

package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// The versification check (see misaligned) compares each pair's Strong's
// numbers with those of the verses up to misalignWindow places away, and
// flags the pair when a neighbour shares more by at least misalignMargin
// (Jaccard index). Measured on KJV against RV1909: a window of 1 misses
// most of Job 39 and 40, where RV1909 is 3 and 5 verses behind; a margin
// of 0.1 also flags pairs that are merely freely translated (Leviticus
// 3, Mark 9), 0.2 starts to miss shifted verses.
const (
	misalignWindow = 5
	misalignMargin = 0.15
)

// pair is one aligned verse pair.
type pair struct {
	key      verseKey
	src, tgt string
}

// titleSample is a psalm verse before and after title stripping, for the
// report.
type titleSample struct {
	key              verseKey
	before, after    string
	title, otherSide string
}

// pairStats counts what align kept and dropped; side 0 is the source,
// 1 the target.
type pairStats struct {
	names [2]string
	// verses are the verse entries of each module (chapter and book
	// heading entries not counted), empty those that strip to nothing,
	// missing the keys of the other module that this one lacks.
	verses, empty, missing [2]int
	// unpartnered are the verses with text whose key is missing or empty
	// on the other side; bothEmpty the keys empty on both sides.
	unpartnered     [2]int
	unpartneredKeys [2][]verseKey
	bothEmpty       int
	// marked are the canonical titles (<title canonical="true">) stripped
	// by markup, split those found by the capitals heuristic where only
	// the other side marks one, notFound those the heuristic missed (the
	// pair is dropped); bothMarked are the pairs with both marked.
	marked, split, notFound [2]int
	bothMarked              int
	// leftAlone are the first verses of chapters (in a module with
	// capitalised openings) with text before the capitalised opening
	// where the other side has no title: these are not titles to strip
	// ("Aleluya. ALABARÉ á Jehová", Psalms 111:1); leftAloneKeys lists
	// them.
	leftAlone     [2]int
	leftAloneKeys [2][]verseKey
	// acrostic counts unmarked acrostic headings stripped where the other
	// side marks one, subscription unmarked subscriptions cut after
	// "Amen." where the other side marks one; ...NotFound those not found
	// (pair dropped).
	acrostic, acrosticNotFound         [2]int
	subscription, subscriptionNotFound [2]int
	// recased are chapter openings in capitals recased.
	recased [2]int
	// misaligned are the pairs dropped by the versification check;
	// misalignedChapters the chapters dropped whole, with their pair
	// counts; unchecked the pairs lacking Strong's numbers on a side.
	misaligned         int
	misalignedChapters []chapterCount
	misalignedVerses   []verseKey
	unchecked          int
	// train and test count the pairs written, testBooks the pairs of each
	// held-out book.
	train, test int
	testBooks   map[string]int
	samples     []titleSample
}

type chapterCount struct {
	chapter verseKey // verse 0
	pairs   int
}

// align pairs the verses of src and tgt by key, strips psalm titles and
// the other headings so both sides stay parallel, drops pairs the
// versification check flags (unless keepMisaligned), and returns the
// pairs in source order (then the target's keys the source lacks, which
// have no partner).
func align(src, tgt *module, keepMisaligned bool) ([]pair, *pairStats) {
	mods := [2]*module{src, tgt}
	st := &pairStats{names: [2]string{src.name, tgt.name}, testBooks: map[string]int{}}
	for s, m := range mods {
		for _, v := range m.verses {
			st.verses[s]++
			if v.text == "" {
				st.empty[s]++
			}
			if mods[1-s].lookup(v.key) == nil {
				st.missing[1-s]++
			}
		}
	}
	drop := map[verseKey]bool{}
	if !keepMisaligned {
		drop = misaligned(src, tgt, st)
	}
	var pairs []pair
	for _, v := range src.verses {
		vs := [2]*verse{&v, tgt.lookup(v.key)}
		text := [2]string{v.text, ""}
		if vs[1] != nil {
			text[1] = vs[1].text
		}
		switch {
		case text[0] == "" && text[1] == "":
			st.bothEmpty++
			continue
		case text[1] == "":
			st.unpartner(0, v.key)
			continue
		case text[0] == "":
			st.unpartner(1, v.key)
			continue
		}
		if ok := st.stripHeadings(mods, vs, &text); !ok || drop[v.key] {
			continue
		}
		for s := range 2 {
			if mods[s].capsOpenings && v.key.verse == 1 {
				if t, changed := mods[s].recaseOpening(text[s]); changed {
					text[s] = t
					st.recased[s]++
				}
			}
		}
		pairs = append(pairs, pair{key: v.key, src: text[0], tgt: text[1]})
	}
	for _, v := range tgt.verses {
		if src.lookup(v.key) == nil && v.text != "" {
			st.unpartner(1, v.key)
		}
	}
	return pairs, st
}

// unpartner counts a verse of side s with text and no partner.
func (st *pairStats) unpartner(s int, k verseKey) {
	st.unpartnered[s]++
	st.unpartneredKeys[s] = append(st.unpartneredKeys[s], k)
}

// stripHeadings removes from text the titles and headings that one side
// marks and the other writes as plain verse text: psalm titles (found by
// splitCapsTitle), acrostic letter names (Psalm 119) and the
// subscriptions of Paul's letters. It returns false when a side marks one
// and the other's cannot be found: the pair is then dropped rather than
// written with text on one side only.
func (st *pairStats) stripHeadings(mods [2]*module, vs [2]*verse, text *[2]string) bool {
	ok := true
	if vs[0].title != "" && vs[1].title != "" {
		st.bothMarked++
	}
	for s := range 2 {
		o := 1 - s
		if vs[s].title != "" {
			st.marked[s]++
		}
		if vs[s].title != "" && vs[o].title == "" {
			before := text[o]
			title, body, found := splitCapsTitle(text[o])
			if !found {
				st.notFound[o]++
				ok = false
			} else {
				st.split[o]++
				text[o] = body
				st.samples = append(st.samples, titleSample{key: vs[s].key, before: before, after: body, title: title, otherSide: vs[s].title})
			}
		}
		if vs[s].title == "" && vs[o].title == "" && vs[s].key.verse == 1 && mods[s].capsOpenings {
			if _, _, found := splitCapsTitle(text[s]); found {
				st.leftAlone[s]++
				st.leftAloneKeys[s] = append(st.leftAloneKeys[s], vs[s].key)
			}
		}
		if mods[s].acrosticBefore(vs[s]) && !mods[o].acrosticBefore(vs[o]) {
			if t, found := stripLeadingCapsWord(text[o]); found {
				st.acrostic[o]++
				text[o] = t
			} else {
				st.acrosticNotFound[o]++
				ok = false
			}
		}
		if vs[s].headingLast && endsWithAmen(text[s]) && !vs[o].headingLast {
			if t, found := cutSubscription(text[o]); found {
				st.subscription[o]++
				text[o] = t
			} else {
				st.subscriptionNotFound[o]++
				ok = false
			}
		}
	}
	return ok
}

// acrosticBefore reports whether an acrostic heading comes before v's
// text: in the entry itself, or, for verse 1, in its chapter's heading
// entry (the KJV puts "א ALEPH." in Psalms 119:0).
func (m *module) acrosticBefore(v *verse) bool {
	if v.headingFirst && isAcrostic(v.heading) {
		return true
	}
	if v.key.verse != 1 {
		return false
	}
	h, ok := m.chapterHeading[verseKey{v.key.book, v.key.chapter, 0}]
	return ok && isAcrostic(h)
}

// misaligned is the versification check. Both modules claim the same
// versification, but RV1909's text follows its own in a few chapters
// (osis2mod moved its verses onto KJV numbers, merging the overflow into
// a chapter's last verse), so "Job 39:1" pairs KJV's wild goats with
// RV1909's lion. Both modules tag words with Strong's numbers: a pair
// whose source verse shares more numbers with a neighbouring target verse
// than with its partner (or the reverse) is flagged, and a chapter with at
// least 3 flagged pairs making up half its checked pairs is dropped
// whole. It returns the keys to drop.
func misaligned(src, tgt *module, st *pairStats) map[verseKey]bool {
	n := len(src.verses)
	tv := make([]*verse, n)
	for i, v := range src.verses {
		tv[i] = tgt.lookup(v.key)
	}
	strongs := func(v *verse) []string {
		if v == nil {
			return nil
		}
		return v.strongs
	}
	flagged := map[verseKey]bool{}
	type count struct{ checked, flagged int }
	chapters := map[verseKey]*count{}
	var order []verseKey
	for i, v := range src.verses {
		if v.text == "" || tv[i] == nil || tv[i].text == "" {
			continue
		}
		a, b := v.strongs, strongs(tv[i])
		if len(a) == 0 || len(b) == 0 {
			st.unchecked++
			continue
		}
		ch := verseKey{v.key.book, v.key.chapter, 0}
		c := chapters[ch]
		if c == nil {
			c = &count{}
			chapters[ch] = c
			order = append(order, ch)
		}
		c.checked++
		same := jaccard(a, b)
		best := 0.0
		for d := 1; d <= misalignWindow; d++ {
			for _, j := range []int{i - d, i + d} {
				if j < 0 || j >= n {
					continue
				}
				best = max(best, jaccard(a, strongs(tv[j])), jaccard(src.verses[j].strongs, b))
			}
		}
		if best >= same+misalignMargin {
			flagged[v.key] = true
			c.flagged++
		}
	}
	drop := map[verseKey]bool{}
	whole := map[verseKey]bool{}
	for _, ch := range order {
		if c := chapters[ch]; c.flagged >= 3 && 2*c.flagged >= c.checked {
			whole[ch] = true
			st.misalignedChapters = append(st.misalignedChapters, chapterCount{ch, c.checked})
		}
	}
	for i, v := range src.verses {
		if tv[i] == nil || v.text == "" || tv[i].text == "" {
			continue
		}
		if whole[verseKey{v.key.book, v.key.chapter, 0}] || flagged[v.key] {
			drop[v.key] = true
			if !whole[verseKey{v.key.book, v.key.chapter, 0}] {
				st.misalignedVerses = append(st.misalignedVerses, v.key)
			}
		}
	}
	st.misaligned = len(drop)
	return drop
}

// writePairs writes each pair as source<TAB>target, those of held-out
// books to test and the others to train, and counts them in st.
func writePairs(pairs []pair, heldOut map[string]bool, train, test io.Writer, st *pairStats) error {
	for _, p := range pairs {
		w := train
		if heldOut[p.key.book] {
			w = test
			st.test++
			st.testBooks[p.key.book]++
		} else {
			st.train++
		}
		if _, err := fmt.Fprintf(w, "%s\t%s\n", p.src, p.tgt); err != nil {
			return err
		}
	}
	for _, b := range books {
		if heldOut[b.imp] && st.testBooks[b.imp] == 0 {
			return fmt.Errorf("held-out book %s has no pairs: is it in both modules?", b.imp)
		}
	}
	return nil
}

// report writes the summary of a conversion.
func (st *pairStats) report(w io.Writer, mods [2]*module, heldOut map[string]bool, verbose bool) {
	p := func(format string, args ...any) { fmt.Fprintf(w, "sword2tsv: "+format+"\n", args...) }
	side := [2]string{"source", "target"}
	most := 20 // keys listed
	if verbose {
		most = 1 << 30
	}
	p("pairs written: %d (train %d, test %d)", st.train+st.test, st.train, st.test)
	for s := range 2 {
		p("%s %s: %d verses, %d empty, %d keys of the other module missing, %d verses with text unpartnered %s",
			side[s], st.names[s], st.verses[s], st.empty[s], st.missing[s], st.unpartnered[s], keyList(st.unpartneredKeys[s], most))
	}
	p("keys empty on both sides: %d", st.bothEmpty)
	p("psalm titles: %d marked in both; source %d marked, %d split by capitals, %d not found; target %d marked, %d split by capitals, %d not found (pairs not found are dropped)",
		st.bothMarked, st.marked[0], st.split[0], st.notFound[0], st.marked[1], st.split[1], st.notFound[1])
	for s := range 2 {
		if mods[s].capsOpenings {
			p("%s opens %d of %d chapters with a word in capitals: %d openings recased; %d first verses have text before the capitals where the other side marks no title, left as they are: %s",
				st.names[s], mods[s].capsOpened, mods[s].openings, st.recased[s], st.leftAlone[s], keyList(st.leftAloneKeys[s], most))
		}
	}
	p("acrostic headings stripped: source %d (%d not found), target %d (%d not found)",
		st.acrostic[0], st.acrosticNotFound[0], st.acrostic[1], st.acrosticNotFound[1])
	p("subscriptions cut: source %d (%d not found), target %d (%d not found)",
		st.subscription[0], st.subscriptionNotFound[0], st.subscription[1], st.subscriptionNotFound[1])
	var chs []string
	wholeN := 0
	for _, c := range st.misalignedChapters {
		chs = append(chs, fmt.Sprintf("%s %d (%d)", c.chapter.book, c.chapter.chapter, c.pairs))
		wholeN += c.pairs
	}
	p("versification check: %d pairs dropped: %d in %d whole chapters [%s], %d single verses %s; %d pairs unchecked (no Strong's numbers on a side)",
		st.misaligned, wholeN, len(st.misalignedChapters), strings.Join(chs, ", "),
		len(st.misalignedVerses), keyList(st.misalignedVerses, most), st.unchecked)
	for s := range 2 {
		if len(mods[s].repairs) > 0 {
			p("%s: %d markup repairs: %s", st.names[s], len(mods[s].repairs), stringList(mods[s].repairs, 5))
		}
		if len(mods[s].unknown) > 0 {
			p("%s: unknown elements (text kept): %s", st.names[s], countList(mods[s].unknown))
		}
	}
	var held []string
	for _, b := range books {
		if heldOut[b.imp] {
			held = append(held, fmt.Sprintf("%s %d", b.osis, st.testBooks[b.imp]))
		}
	}
	total := st.train + st.test
	if total > 0 {
		p("held out: %s = %d pairs, %.1f%%", strings.Join(held, ", "), st.test, 100*float64(st.test)/float64(total))
	}
	if verbose {
		for _, sm := range st.samples {
			p("title %s: %q | %q", sm.key, sm.otherSide, sm.title)
		}
	}
}

// keyList formats up to max keys.
func keyList(keys []verseKey, max int) string {
	var s []string
	for i, k := range keys {
		if i == max {
			s = append(s, fmt.Sprintf("and %d more", len(keys)-max))
			break
		}
		s = append(s, k.String())
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// stringList formats up to max strings.
func stringList(ss []string, max int) string {
	if len(ss) > max {
		return "[" + strings.Join(ss[:max], "; ") + fmt.Sprintf("; and %d more]", len(ss)-max)
	}
	return "[" + strings.Join(ss, "; ") + "]"
}

// countList formats counts by name, most frequent first.
func countList(m map[string]int) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if m[names[i]] != m[names[j]] {
			return m[names[i]] > m[names[j]]
		}
		return names[i] < names[j]
	})
	var s []string
	for _, n := range names {
		s = append(s, fmt.Sprintf("<%s>×%d", n, m[n]))
	}
	return strings.Join(s, ", ")
}

// monoStats counts what writeMono wrote.
type monoStats struct {
	lines, empty, recased int
	excluded              map[string]int // verses of held-out books left out
}

// writeMono writes one verse per line of m: canonical titles kept at the
// start of their verse (monolingual text has no partner to stay parallel
// with), chapter openings recased, empty verses skipped, and the verses
// of held-out books left out when heldOut is not nil.
func writeMono(m *module, heldOut map[string]bool, w io.Writer) (monoStats, error) {
	st := monoStats{excluded: map[string]int{}}
	for _, v := range m.verses {
		if heldOut[v.key.book] {
			st.excluded[v.key.book]++
			continue
		}
		text := v.text
		if m.capsOpenings && v.key.verse == 1 {
			if t, changed := m.recaseOpening(text); changed {
				text = t
				st.recased++
			}
		}
		line := strings.TrimSpace(v.title + " " + text)
		if line == "" {
			st.empty++
			continue
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return st, err
		}
		st.lines++
	}
	return st, nil
}

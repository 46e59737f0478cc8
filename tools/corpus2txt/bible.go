package main

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// parseImp reads a SWORD module exported by mod2imp ("$$$Book C:V" key lines,
// each followed by the entry's OSIS text) and calls emit once per book, in
// order, with the book's name and its text split into sentences. Verse
// numbers (which live only in the keys), headings (verse 0 entries and
// <title> elements), notes and all markup are dropped.
func parseImp(name string, r io.Reader, emit func(book string, sentences []string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var (
		book    string          // the book being read
		text    strings.Builder // its verses so far
		keep    bool            // whether the current entry is a verse
		keyLine int
	)
	flush := func() error {
		if book == "" {
			return nil
		}
		err := emit(book, splitSentences(text.String()))
		text.Reset()
		return err
	}
	for line := 1; sc.Scan(); line++ {
		s := sc.Text()
		if key, ok := strings.CutPrefix(s, "$$$"); ok {
			b, verse, ok := parseVerseKey(key)
			keep = ok && verse > 0
			keyLine = line
			if keep && b != book {
				if err := flush(); err != nil {
					return err
				}
				book = b
			}
			continue
		}
		if !keep {
			continue
		}
		if keyLine == 0 {
			return lineError(name, line, "text before the first $$$ key")
		}
		plain, err := stripOSIS(s)
		if err != nil {
			return lineError(name, line, "%v", err)
		}
		text.WriteString(plain)
		text.WriteByte(' ')
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return flush()
}

// parseVerseKey splits a key such as "1 Kings 3:4" into its book and verse
// number; ok is false for keys that name no verse ("[ Module Heading ]").
func parseVerseKey(key string) (book string, verse int, ok bool) {
	i := strings.LastIndexByte(key, ' ')
	if i <= 0 {
		return "", 0, false
	}
	c, v, found := strings.Cut(key[i+1:], ":")
	if !found {
		return "", 0, false
	}
	if _, err := strconv.Atoi(c); err != nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return "", 0, false
	}
	return key[:i], n, true
}

// skipContent names the OSIS elements whose text is not scripture.
var skipContent = map[string]bool{"note": true, "title": true}

// stripOSIS returns the text of one OSIS fragment without its markup, notes
// and titles, with entities decoded and the pilcrow (¶) dropped. Where a
// note sat between two words ("God<note>…</note>created"), a space is put.
func stripOSIS(s string) (string, error) {
	var b strings.Builder
	var skip []string // open elements whose content is skipped
	pendingSpace := false
	for i := 0; i < len(s); {
		if s[i] == '<' {
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				return "", fmt.Errorf("unclosed tag at byte %d", i)
			}
			tag := s[i+1 : i+j]
			i += j + 1
			closing := strings.HasPrefix(tag, "/")
			selfClosing := strings.HasSuffix(tag, "/")
			elem := strings.TrimPrefix(tag, "/")
			if k := strings.IndexAny(elem, " /\t"); k >= 0 {
				elem = elem[:k]
			}
			switch {
			case selfClosing || !skipContent[elem]:
			case closing:
				if len(skip) > 0 && skip[len(skip)-1] == elem {
					skip = skip[:len(skip)-1]
					pendingSpace = true
				}
			default:
				skip = append(skip, elem)
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if len(skip) > 0 || r == '¶' {
			continue
		}
		if pendingSpace {
			if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '“' {
				b.WriteByte(' ')
			}
			pendingSpace = false
		}
		b.WriteRune(r)
	}
	return html.UnescapeString(b.String()), nil
}

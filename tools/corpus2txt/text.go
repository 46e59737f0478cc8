package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"
)

// stats counts what one source wrote.
type stats struct {
	docs, sentences, words, bytes int64
}

func (s *stats) add(o stats) {
	s.docs += o.docs
	s.sentences += o.sentences
	s.words += o.words
	s.bytes += o.bytes
}

// docWriter writes documents in the layout BERT's create_pretraining_data
// reads: one sentence per line, and a blank line between documents.
type docWriter struct {
	w  *bufio.Writer
	st stats
}

// writeDoc writes one document; empty sentences are dropped, and a document
// with no sentences is not written at all.
func (d *docWriter) writeDoc(sentences []string) error {
	var n int
	for _, s := range sentences {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if n == 0 && d.st.docs > 0 {
			if err := d.w.WriteByte('\n'); err != nil {
				return err
			}
			d.st.bytes++
		}
		if _, err := d.w.WriteString(s); err != nil {
			return err
		}
		if err := d.w.WriteByte('\n'); err != nil {
			return err
		}
		n++
		d.st.sentences++
		d.st.words += int64(len(strings.Fields(s)))
		d.st.bytes += int64(len(s) + 1)
	}
	if n > 0 {
		d.st.docs++
	}
	return nil
}

// collapseSpace replaces every run of white space in s by one space and
// trims both ends.
func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// abbreviations end with a full stop that does not end a sentence.
var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "st": true, "jr": true,
	"sr": true, "gen": true, "gov": true, "sen": true, "rep": true, "col": true,
	"capt": true, "lt": true, "hon": true, "rev": true, "prof": true, "no": true,
	"vol": true, "etc": true, "vs": true, "mt": true, "ft": true, "co": true,
	"inc": true, "messrs": true, "esq": true, "maj": true, "sgt": true, "cf": true,
}

// closers may follow a sentence's final punctuation.
const closers = "\"')]”’"

// splitSentences splits text (white space is collapsed first) into rough
// sentences: a sentence ends at '.', '!' or '?' (and any closing quotes or
// brackets after it) followed by a space and an upper-case letter, a digit
// or an opening quote or bracket, unless the full stop ends a known
// abbreviation or a single-letter initial ("J.", "U.S.").
func splitSentences(text string) []string {
	text = collapseSpace(text)
	var out []string
	start := 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if r != '.' && r != '!' && r != '?' {
			continue
		}
		end := i
		for end < len(text) {
			c, sz := utf8.DecodeRuneInString(text[end:])
			if !strings.ContainsRune(closers, c) {
				break
			}
			end += sz
		}
		if end+1 >= len(text) || text[end] != ' ' {
			continue
		}
		next, _ := utf8.DecodeRuneInString(text[end+1:])
		if !unicode.IsUpper(next) && !unicode.IsDigit(next) && !strings.ContainsRune("\"'(“‘[", next) {
			continue
		}
		if r == '.' && isAbbreviation(text[start:i-1]) {
			continue
		}
		out = append(out, text[start:end])
		start = end + 1
		i = start
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// isAbbreviation reports whether the last word of before (the text up to a
// full stop) is an abbreviation or an initial.
func isAbbreviation(before string) bool {
	w := before[strings.LastIndexByte(before, ' ')+1:]
	w = strings.TrimLeft(w, "\"'(“‘[")
	if utf8.RuneCountInString(w) == 1 || strings.Contains(w, ".") {
		return true
	}
	return abbreviations[strings.ToLower(w)]
}

// lineError is an error at a line of a named file.
func lineError(name string, line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
}

// bufioWriter returns a buffered writer of the size the converters use.
func bufioWriter(w io.Writer) *bufio.Writer {
	return bufio.NewWriterSize(w, 1<<20)
}

// writeFile parses the file at path with parse and writes its sentences as
// one document.
func (w *docWriter) writeFile(path string, parse func(name string, r io.Reader) ([]string, error)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	sents, err := parse(path, f)
	f.Close()
	if err != nil {
		return err
	}
	return w.writeDoc(sents)
}

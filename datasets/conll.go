package datasets

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"unicode/utf8"
)

// TaggedSentence is one sentence of a CoNLL file: its words and their
// tags, one tag per word (len(Tokens) == len(Tags)).
type TaggedSentence struct {
	Tokens []string
	Tags   []string
}

// CoNLLOptions say which columns ReadCoNLL reads, counted from 1.
type CoNLLOptions struct {
	TokenColumn int // 0: the first column
	TagColumn   int // 0: the last column
}

// ReadCoNLL reads a CoNLL column file (CoNLL-2000/2003 and the layout
// Hugging Face's token-classification examples read): one word per line,
// its columns separated by spaces or tabs, a blank line between sentences.
// Lines whose first column is -DOCSTART- are document markers and are
// skipped. Every line of a file has the same number of columns (at least
// two): a line with another count is an error naming the file and line, as
// are invalid UTF-8, a line longer than MaxLineBytes, an empty file and a
// file with no sentence.
func ReadCoNLL(path string, opts CoNLLOptions) ([]TaggedSentence, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is in the message already
		}
		return nil, fmt.Errorf("datasets: %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("datasets: %s: %w", path, err)
	} else if fi.IsDir() {
		return nil, fmt.Errorf("datasets: %s: is a directory; give a CoNLL file", path)
	}
	return ParseCoNLL(path, f, opts)
}

// ParseCoNLL is ReadCoNLL on a reader; name is the file name its errors
// give.
func ParseCoNLL(name string, r io.Reader, opts CoNLLOptions) ([]TaggedSentence, error) {
	if opts.TokenColumn < 0 || opts.TagColumn < 0 {
		return nil, fmt.Errorf("datasets: %s: columns are counted from 1; got token column %d, tag column %d", name, opts.TokenColumn, opts.TagColumn)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	var (
		out   []TaggedSentence
		cur   TaggedSentence
		ncols int // the file's column count, from its first word line
		first int // the line that set it
		lines int
	)
	flush := func() {
		if len(cur.Tokens) > 0 {
			out = append(out, cur)
			cur = TaggedSentence{}
		}
	}
	for sc.Scan() {
		lines++
		text := strings.TrimSuffix(sc.Text(), "\r")
		if !utf8.ValidString(text) {
			return nil, fmt.Errorf("datasets: %s:%d: invalid UTF-8", name, lines)
		}
		cols := strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\t' })
		if len(cols) == 0 {
			flush()
			continue
		}
		if cols[0] == "-DOCSTART-" {
			flush()
			continue
		}
		if ncols == 0 {
			ncols, first = len(cols), lines
			if ncols < 2 {
				return nil, fmt.Errorf("datasets: %s:%d: one column (%q); a CoNLL file has a word and a tag on each line, separated by a space or a tab", name, lines, text)
			}
			for _, c := range []int{opts.TokenColumn, opts.TagColumn} {
				if c > ncols {
					return nil, fmt.Errorf("datasets: %s:%d: column %d asked for, the file has %d", name, lines, c, ncols)
				}
			}
		}
		if len(cols) != ncols {
			return nil, fmt.Errorf("datasets: %s:%d: %d columns, but line %d has %d; every line must have the same columns (a word with a space in it?)", name, lines, len(cols), first, ncols)
		}
		ti, gi := opts.TokenColumn-1, opts.TagColumn-1
		if opts.TokenColumn == 0 {
			ti = 0
		}
		if opts.TagColumn == 0 {
			gi = ncols - 1
		}
		cur.Tokens = append(cur.Tokens, cols[ti])
		cur.Tags = append(cur.Tags, cols[gi])
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("datasets: %s:%d: a line is longer than %d MiB: this is not a CoNLL file", name, lines+1, MaxLineBytes>>20)
		}
		return nil, fmt.Errorf("datasets: %s:%d: %w", name, lines+1, err)
	}
	flush()
	if lines == 0 {
		return nil, fmt.Errorf("datasets: %s: empty file", name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("datasets: %s: no sentences (only blank and -DOCSTART- lines)", name)
	}
	return out, nil
}

// Tagset lists the tags of the sentences, sorted, each once.
func Tagset(s []TaggedSentence) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		for _, t := range x.Tags {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}

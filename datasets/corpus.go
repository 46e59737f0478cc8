package datasets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// chunkSize is the number of bytes Corpus.Each reads at a time. A chunk is
// cut after its last newline, so a chunk is a run of whole lines unless a
// single line is longer than chunkSize.
const chunkSize = 64 << 10

// CorpusOptions are the runtime knobs of OpenCorpus.
type CorpusOptions struct {
	// ReplaceInvalid replaces each byte that is not part of valid UTF-8 with
	// U+FFFD instead of failing. It is part of the cache key, since it
	// changes the text.
	ReplaceInvalid bool
}

// Corpus is a set of UTF-8 text files read in order, one after the other.
// It never holds more than one chunk of text in memory.
type Corpus struct {
	files []corpusFile
	opts  CorpusOptions
}

// corpusFile is what OpenCorpus saw of a file: the cache key is made of it.
type corpusFile struct {
	path    string // absolute
	size    int64  // bytes
	modTime int64  // Unix nanoseconds
}

// OpenCorpus finds the files named by pattern, which is a file, a directory
// (every regular file below it, recursively, skipping names that start with
// a dot) or a filepath.Match glob whose matches may be either. The files are
// sorted by path. It is an error when nothing matches or when every file is
// empty. The files are only stat-ed here; Each reads them.
func OpenCorpus(pattern string, opts CorpusOptions) (*Corpus, error) {
	paths, err := expand(pattern)
	if err != nil {
		return nil, fmt.Errorf("datasets: open corpus %q: %w", pattern, err)
	}
	c := &Corpus{opts: opts}
	var total int64
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("datasets: open corpus %q: %w", pattern, err)
		}
		c.files = append(c.files, corpusFile{path: p, size: fi.Size(), modTime: fi.ModTime().UnixNano()})
		total += fi.Size()
	}
	if total == 0 {
		return nil, fmt.Errorf("datasets: open corpus %q: all %d file(s) are empty", pattern, len(paths))
	}
	return c, nil
}

// expand resolves pattern to a sorted list of absolute paths of regular
// files, without duplicates.
func expand(pattern string) ([]string, error) {
	if pattern == "" {
		return nil, errors.New("empty pattern")
	}
	var matches []string
	if _, err := os.Stat(pattern); err == nil {
		matches = []string{pattern} // a literal name wins over glob syntax in it
	} else {
		m, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		matches = m
	}
	var paths []string
	add := func(p string) error {
		abs, err := filepath.Abs(p)
		paths = append(paths, abs)
		return err
	}
	for _, m := range matches {
		fi, err := os.Stat(m) // follows a symbolic link
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if fi.Mode().IsRegular() {
				if err := add(m); err != nil {
					return nil, err
				}
			}
			continue
		}
		err = filepath.WalkDir(m, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case p == m:
				return nil
			case strings.HasPrefix(d.Name(), "."):
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			case d.Type()&fs.ModeSymlink != 0:
				// A link to a file counts; links to directories are not
				// followed, so a walk cannot loop.
				if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
					return add(p)
				}
				return nil
			case d.Type().IsRegular():
				return add(p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(paths) == 0 {
		return nil, errors.New("no files match")
	}
	slices.Sort(paths)
	return slices.Compact(paths), nil
}

// Files returns the absolute paths of the corpus's files, in reading order.
func (c *Corpus) Files() []string {
	out := make([]string, len(c.files))
	for i, f := range c.files {
		out[i] = f.path
	}
	return out
}

// Size returns the total size of the corpus's files in bytes.
func (c *Corpus) Size() int64 {
	var n int64
	for _, f := range c.files {
		n += f.size
	}
	return n
}

// Each calls fn with the corpus's text, file after file, in chunks of whole
// lines of about 64 KiB (a longer line is cut at a character boundary). A
// chunk never spans two files, and the chunks of a file concatenate to its
// text. Invalid UTF-8 is an error naming the file and the byte offset of
// the first bad byte, unless CorpusOptions.ReplaceInvalid is set. An error
// from fn stops the walk and is returned, wrapped with the file's name.
func (c *Corpus) Each(fn func(text string) error) error {
	return c.EachContext(context.Background(), fn)
}

// EachContext is Each that stops when ctx is done: it checks ctx before
// each chunk (64 KiB) and returns an error wrapping ctx.Err().
func (c *Corpus) EachContext(ctx context.Context, fn func(text string) error) error {
	buf := make([]byte, chunkSize)
	for _, f := range c.files {
		if err := c.eachChunk(ctx, f.path, buf, fn); err != nil {
			return fmt.Errorf("datasets: %s: %w", f.path, err)
		}
	}
	return nil
}

// errHasText stops HasText's walk at the first text.
var errHasText = errors.New("has text")

// HasText reports whether the corpus holds anything but white space,
// reading only up to its first other character. A corpus of blank lines is
// not empty to OpenCorpus (its files have bytes) but has nothing to train
// on; CheckText says so.
func (c *Corpus) HasText(ctx context.Context) (bool, error) {
	err := c.EachContext(ctx, func(text string) error {
		if strings.TrimSpace(text) != "" {
			return errHasText
		}
		return nil
	})
	if errors.Is(err, errHasText) {
		return true, nil
	}
	return false, err
}

// CheckText returns an error naming the corpus's files when it holds only
// white space (blank lines): an empty corpus, whatever the tokenizer.
func (c *Corpus) CheckText(ctx context.Context) error {
	ok, err := c.HasText(ctx)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	files := c.Files()
	name := files[0]
	if len(files) > 1 {
		name = fmt.Sprintf("%s and %d more file(s)", files[0], len(files)-1)
	}
	return fmt.Errorf("datasets: corpus %s is empty: it holds only blank lines (white space), no text to train on or score", name)
}

// eachChunk streams one file through fn, using buf as its read buffer.
func (c *Corpus) eachChunk(ctx context.Context, path string, buf []byte, fn func(string) error) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	var (
		held   int   // bytes carried over at the start of buf
		offset int64 // file offset of buf[0]
	)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := io.ReadFull(fh, buf[held:])
		end := held + n
		eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !eof {
			return err
		}
		cut := end
		if !eof {
			cut = cutPoint(buf[:end])
		}
		if cut > 0 {
			text, err := c.decode(buf[:cut], offset)
			if err != nil {
				return err
			}
			if err := fn(text); err != nil {
				return err
			}
		}
		if eof {
			return nil
		}
		held = copy(buf, buf[cut:end])
		offset += int64(cut)
	}
}

// cutPoint returns where to end a chunk read from the middle of a file:
// after the last newline, or else before an incomplete trailing character.
func cutPoint(b []byte) int {
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return i + 1
	}
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// decode checks that b, read at file offset off, is valid UTF-8 and returns
// it as a string, or replaces each invalid byte with U+FFFD when asked to.
func (c *Corpus) decode(b []byte, off int64) (string, error) {
	if utf8.Valid(b) {
		return string(b), nil
	}
	if !c.opts.ReplaceInvalid {
		i := 0
		for i < len(b) {
			r, w := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && w == 1 {
				break
			}
			i += w
		}
		return "", fmt.Errorf("invalid UTF-8 at byte offset %d", off+int64(i))
	}
	var sb strings.Builder
	sb.Grow(len(b) + 16)
	for i := 0; i < len(b); {
		r, w := utf8.DecodeRune(b[i:])
		sb.WriteRune(r) // RuneError is U+FFFD
		i += w
	}
	return sb.String(), nil
}

package datasets

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"
)

// Pair is one translation example: a source sentence and its target,
// each trimmed of surrounding white space and never empty.
type Pair struct{ Src, Tgt string }

// ParallelReport counts what reading a parallel corpus kept and skipped,
// so that nothing is dropped silently. Every line read is counted once:
// Lines = Pairs + NoTab + Empty + Misaligned + InvalidUTF8.
type ParallelReport struct {
	// Lines is the number of lines read; for two files, the line count of
	// the longer one.
	Lines int
	// Pairs is the number of pairs returned.
	Pairs int
	// NoTab counts TSV lines without a tab (they have no target).
	NoTab int
	// Empty counts blank lines (only white space; for two files, blank in
	// both) and lines whose source or target is empty after trimming.
	Empty int
	// Misaligned counts, for two files of different lengths, the lines of
	// the longer file that have no partner in the shorter one.
	Misaligned int
	// InvalidUTF8 counts lines that are not valid UTF-8 (in either file).
	InvalidUTF8 int
}

// String summarises r on one line, for a command to print, e.g.
// "read 10 lines: 7 pairs; skipped 2 without a tab, 1 empty".
func (r ParallelReport) String() string {
	var skips []string
	for _, s := range []struct {
		n    int
		what string
	}{
		{r.NoTab, "without a tab"},
		{r.Empty, "empty"},
		{r.Misaligned, "misaligned"},
		{r.InvalidUTF8, "invalid UTF-8"},
	} {
		if s.n > 0 {
			skips = append(skips, fmt.Sprintf("%d %s", s.n, s.what))
		}
	}
	if len(skips) == 0 {
		return fmt.Sprintf("read %d lines: %d pairs, none skipped", r.Lines, r.Pairs)
	}
	return fmt.Sprintf("read %d lines: %d pairs; skipped %s", r.Lines, r.Pairs, strings.Join(skips, ", "))
}

// ParallelOptions are the knobs of ReadParallelTSV and ReadParallelFiles.
type ParallelOptions struct {
	// Strict makes the first bad line an error naming its file and line,
	// instead of a skip counted in the report. Blank lines are skipped and
	// counted as Empty even when Strict: only a line with exactly one empty
	// side is an error.
	Strict bool
}

// ReadParallelTSV reads pairs, in file order, from lines of the form
// source<TAB>target, as in Tatoeba and Anki exports; fields after a second
// tab (Tatoeba's attribution column) are ignored. Each side is trimmed of
// surrounding white space, so CRLF line ends are fine, and a byte-order
// mark at the start of the file is dropped. Unlike ReadLabelled there is
// no header row and no quoting: a quote is an ordinary character.
//
// A blank line, a line without a tab, a line with an empty side and a line
// that is not valid UTF-8 are skipped and counted in the report; with
// opts.Strict each but the blank line is an error naming the file and the
// line. Lines may be of any length. A file without a single pair is an
// error; the report is returned with every error.
func ReadParallelTSV(path string, opts ParallelOptions) ([]Pair, ParallelReport, error) {
	var rep ParallelReport
	fail := func(err error) ([]Pair, ParallelReport, error) {
		return nil, rep, fmt.Errorf("datasets: %s: %w", path, err)
	}
	f, err := openParallelFile(path)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	lr := newParallelLines(f)
	var out []Pair
	for {
		line, ok, err := lr.next()
		if err != nil {
			return fail(fmt.Errorf("line %d: %w", lr.n+1, err))
		}
		if !ok {
			break
		}
		rep.Lines++
		bad := func(count *int, what string) error {
			if opts.Strict {
				return fmt.Errorf("line %d: %s", lr.n, what)
			}
			*count++
			return nil
		}
		if !utf8.Valid(line) {
			if err := bad(&rep.InvalidUTF8, "invalid UTF-8"); err != nil {
				return fail(err)
			}
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			rep.Empty++
			continue
		}
		src, rest, found := bytes.Cut(line, []byte{'\t'})
		if !found {
			if err := bad(&rep.NoTab, "no tab between source and target"); err != nil {
				return fail(err)
			}
			continue
		}
		tgt, _, _ := bytes.Cut(rest, []byte{'\t'})
		p := Pair{Src: string(bytes.TrimSpace(src)), Tgt: string(bytes.TrimSpace(tgt))}
		if p.Src == "" || p.Tgt == "" {
			if err := bad(&rep.Empty, "empty "+emptySide(p)); err != nil {
				return fail(err)
			}
			continue
		}
		out = append(out, p)
	}
	rep.Pairs = len(out)
	if len(out) == 0 {
		return fail(fmt.Errorf("no pairs (%s)", rep))
	}
	return out, rep, nil
}

// ReadParallelFiles reads pairs from two aligned files, line i of src and
// line i of tgt making pair i, as in WMT and Europarl releases. Each line
// is trimmed of surrounding white space (so CRLF line ends are fine) and a
// byte-order mark at the start of either file is dropped.
//
// Lines blank in both files are skipped and counted as Empty. A line blank
// in one file only, or invalid UTF-8 in either, is skipped and counted;
// so are the extra lines of the longer file when the line counts differ
// (Misaligned). With opts.Strict each of these but the blank line is an
// error naming the file and the line. Files without a single pair are an
// error; the report is returned with every error.
func ReadParallelFiles(src, tgt string, opts ParallelOptions) ([]Pair, ParallelReport, error) {
	var rep ParallelReport
	both := src + ", " + tgt
	fail := func(name string, err error) ([]Pair, ParallelReport, error) {
		return nil, rep, fmt.Errorf("datasets: %s: %w", name, err)
	}
	fSrc, err := openParallelFile(src)
	if err != nil {
		return fail(src, err)
	}
	defer fSrc.Close()
	fTgt, err := openParallelFile(tgt)
	if err != nil {
		return fail(tgt, err)
	}
	defer fTgt.Close()
	ls, lt := newParallelLines(fSrc), newParallelLines(fTgt)
	var out []Pair
	for {
		a, okA, err := ls.next()
		if err != nil {
			return fail(src, fmt.Errorf("line %d: %w", ls.n+1, err))
		}
		b, okB, err := lt.next()
		if err != nil {
			return fail(tgt, fmt.Errorf("line %d: %w", lt.n+1, err))
		}
		if !okA && !okB {
			break
		}
		rep.Lines++
		if okA != okB {
			if opts.Strict {
				longer, shorter, lr := src, tgt, ls
				if okB {
					longer, shorter, lr = tgt, src, lt
				}
				return fail(longer, fmt.Errorf("line %d has no partner: %s has only %d lines", lr.n, shorter, lr.n-1))
			}
			rep.Misaligned++
			continue
		}
		if !utf8.Valid(a) || !utf8.Valid(b) {
			if opts.Strict {
				name := src
				if utf8.Valid(a) {
					name = tgt
				}
				return fail(name, fmt.Errorf("line %d: invalid UTF-8", ls.n))
			}
			rep.InvalidUTF8++
			continue
		}
		p := Pair{Src: string(bytes.TrimSpace(a)), Tgt: string(bytes.TrimSpace(b))}
		switch {
		case p.Src == "" && p.Tgt == "":
			rep.Empty++
			continue
		case p.Src == "" || p.Tgt == "":
			if opts.Strict {
				name, other := src, tgt
				if p.Tgt == "" {
					name, other = tgt, src
				}
				return fail(name, fmt.Errorf("line %d: blank, but line %d of %s is not", ls.n, ls.n, other))
			}
			rep.Empty++
			continue
		}
		out = append(out, p)
	}
	rep.Pairs = len(out)
	if len(out) == 0 {
		return fail(both, fmt.Errorf("no pairs (%s)", rep))
	}
	return out, rep, nil
}

// emptySide names the empty side(s) of p for an error message.
func emptySide(p Pair) string {
	switch {
	case p.Src == "" && p.Tgt == "":
		return "source and target"
	case p.Src == "":
		return "source"
	}
	return "target"
}

// openParallelFile opens path for reading, with the error messages ReadLabelled
// gives: the path is left out (the caller adds it) and a directory is
// refused at once.
func openParallelFile(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, err
	}
	if fi, err := f.Stat(); err != nil {
		f.Close()
		return nil, err
	} else if fi.IsDir() {
		f.Close()
		return nil, errors.New("is a directory")
	}
	return f, nil
}

// parallelLines reads lines of any length, without their "\n" or "\r\n" and,
// on the first line, without a UTF-8 byte-order mark.
type parallelLines struct {
	r *bufio.Reader
	n int // number of the line last returned, from 1
}

func newParallelLines(r io.Reader) *parallelLines {
	return &parallelLines{r: bufio.NewReaderSize(newLineLimit(r, MaxLineBytes), 64<<10)}
}

// next returns the next line, and ok = false at the end of the input. The
// line is valid until the next call.
func (l *parallelLines) next() (line []byte, ok bool, err error) {
	line, err = l.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// A long line: gather it whole.
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = l.r.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	switch {
	case errors.Is(err, io.EOF):
		if len(line) == 0 {
			return nil, false, nil
		}
	case err != nil:
		return nil, false, err
	}
	l.n++
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if l.n == 1 {
		line = bytes.TrimPrefix(line, []byte("\ufeff"))
	}
	return line, true, nil
}

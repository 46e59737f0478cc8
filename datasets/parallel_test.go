package datasets

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkReportSums asserts that every line read is counted once.
func checkReportSums(t *testing.T, r ParallelReport) {
	t.Helper()
	assert.Equal(t, r.Lines, r.Pairs+r.NoTab+r.Empty+r.Misaligned+r.InvalidUTF8, "every line counted once: %+v", r)
}

func TestReadParallelTSV(t *testing.T) {
	content := "\ufeffHi.\tHallo.\r\n" + // BOM and CRLF
		"Run!\tLauf!\tCC-BY 2.0 (France) Attribution: tatoeba.org #906328 (CM)\r\n" + // Tatoeba's third column
		"\n" + // blank: Empty
		"  \t \r\n" + // blank after trimming: Empty
		"no tab here\n" +
		"\tnur Ziel\n" + // empty source
		"only source\t\n" + // empty target
		"bad \xff byte\tx\n" +
		"  I see.  \t  Ich verstehe.  \n" + // trimmed
		"\"Quoted\"\t\"Zitiert\"" // no final newline; quotes are plain characters
	path := writeFile(t, t.TempDir(), "deu.txt", content)
	pairs, rep, err := ReadParallelTSV(path, ParallelOptions{})
	require.NoError(t, err)
	assert.Equal(t, []Pair{
		{"Hi.", "Hallo."},
		{"Run!", "Lauf!"},
		{"I see.", "Ich verstehe."},
		{`"Quoted"`, `"Zitiert"`},
	}, pairs)
	assert.Equal(t, ParallelReport{Lines: 10, Pairs: 4, NoTab: 1, Empty: 4, InvalidUTF8: 1}, rep)
	checkReportSums(t, rep)
	assert.Equal(t, "read 10 lines: 4 pairs; skipped 1 without a tab, 4 empty, 1 invalid UTF-8", rep.String())
}

func TestReadParallelTSVStrict(t *testing.T) {
	for _, tc := range []struct {
		content, want string
	}{
		{"a\tb\nno tab\n", "line 2: no tab between source and target"},
		{"a\tb\n\t b\n", "line 2: empty source"},
		{"a\tb\nc\t\n", "line 2: empty target"},
		{"a\tb\n\xc3\tc\n", "line 2: invalid UTF-8"},
	} {
		path := writeFile(t, t.TempDir(), "x.tsv", tc.content)
		_, _, err := ReadParallelTSV(path, ParallelOptions{Strict: true})
		require.Error(t, err, tc.content)
		assert.Equal(t, "datasets: "+path+": "+tc.want, err.Error())
		_, rep, err := ReadParallelTSV(path, ParallelOptions{}) // not strict: counted
		require.NoError(t, err)
		assert.Equal(t, 1, rep.Pairs)
		checkReportSums(t, rep)
	}
	// Blank lines are no error even when strict.
	path := writeFile(t, t.TempDir(), "x.tsv", "a\tb\n\n  \n")
	pairs, rep, err := ReadParallelTSV(path, ParallelOptions{Strict: true})
	require.NoError(t, err)
	assert.Len(t, pairs, 1)
	assert.Equal(t, ParallelReport{Lines: 3, Pairs: 1, Empty: 2}, rep)
	assert.Equal(t, "read 3 lines: 1 pairs; skipped 2 empty", rep.String())
}

func TestReadParallelTSVLongLine(t *testing.T) {
	long := strings.Repeat("wort ", 100_000) // 500 kB, far past bufio's default 64 KiB
	path := writeFile(t, t.TempDir(), "long.tsv", "a\tb\r\n"+long+"\t"+long+"\r\nc\td\n")
	pairs, rep, err := ReadParallelTSV(path, ParallelOptions{Strict: true})
	require.NoError(t, err)
	require.Len(t, pairs, 3)
	assert.Equal(t, strings.TrimSpace(long), pairs[1].Src)
	assert.Equal(t, strings.TrimSpace(long), pairs[1].Tgt)
	assert.Equal(t, Pair{"c", "d"}, pairs[2])
	assert.Equal(t, "read 3 lines: 3 pairs, none skipped", rep.String())
}

func TestReadParallelErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.tsv")
	_, _, err := ReadParallelTSV(missing, ParallelOptions{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, fs.ErrNotExist), err.Error())
	assert.Equal(t, 1, strings.Count(err.Error(), missing), "the path once: %v", err)
	assert.True(t, strings.HasPrefix(err.Error(), "datasets: "+missing+": "), err.Error())

	_, _, err = ReadParallelTSV(dir, ParallelOptions{})
	assert.ErrorContains(t, err, dir+": is a directory")

	// No pairs at all: an error that carries the report.
	empty := writeFile(t, dir, "empty.tsv", "")
	_, rep, err := ReadParallelTSV(empty, ParallelOptions{})
	assert.ErrorContains(t, err, "empty.tsv: no pairs (read 0 lines: 0 pairs, none skipped)")
	assert.Zero(t, rep.Lines)
	noTabs := writeFile(t, dir, "notabs.tsv", "one\ntwo\n")
	_, rep, err = ReadParallelTSV(noTabs, ParallelOptions{})
	assert.ErrorContains(t, err, "no pairs (read 2 lines: 0 pairs; skipped 2 without a tab)")
	assert.Equal(t, 2, rep.NoTab)

	src := writeFile(t, dir, "a.en", "x\n")
	_, _, err = ReadParallelFiles(src, missing, ParallelOptions{})
	assert.True(t, errors.Is(err, fs.ErrNotExist))
	assert.True(t, strings.HasPrefix(err.Error(), "datasets: "+missing+": "), err.Error())
	_, _, err = ReadParallelFiles(missing, src, ParallelOptions{})
	assert.True(t, strings.HasPrefix(err.Error(), "datasets: "+missing+": "), err.Error())
}

func TestReadParallelFiles(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "train.en", "\ufeffHello .\r\n\nbad \xff\nonly source\n\n  Thanks  \nextra 1\nextra 2\n")
	tgt := writeFile(t, dir, "train.de", "Hallo .\r\n\nok\n\nnur Ziel\n\ufeffDanke\n") // a BOM past line 1 is text
	pairs, rep, err := ReadParallelFiles(src, tgt, ParallelOptions{})
	require.NoError(t, err)
	assert.Equal(t, []Pair{{"Hello .", "Hallo ."}, {"Thanks", "\ufeffDanke"}}, pairs)
	assert.Equal(t, ParallelReport{Lines: 8, Pairs: 2, Empty: 3, Misaligned: 2, InvalidUTF8: 1}, rep)
	checkReportSums(t, rep)
	assert.Equal(t, "read 8 lines: 2 pairs; skipped 3 empty, 2 misaligned, 1 invalid UTF-8", rep.String())

	// Swapped, the target file is the longer one: the same counts.
	_, rep2, err := ReadParallelFiles(tgt, src, ParallelOptions{})
	require.NoError(t, err)
	assert.Equal(t, rep, rep2)
}

func TestReadParallelFilesStrict(t *testing.T) {
	dir := t.TempDir()
	strict := ParallelOptions{Strict: true}
	a := writeFile(t, dir, "a.en", "one\ntwo\nthree\n")
	b := writeFile(t, dir, "b.de", "eins\nzwei\n")
	_, _, err := ReadParallelFiles(a, b, strict)
	assert.EqualError(t, err, "datasets: "+a+": line 3 has no partner: "+b+" has only 2 lines")
	_, _, err = ReadParallelFiles(b, a, strict)
	assert.EqualError(t, err, "datasets: "+a+": line 3 has no partner: "+b+" has only 2 lines")

	c := writeFile(t, dir, "c.de", "eins\n\ndrei\n")
	_, _, err = ReadParallelFiles(a, c, strict)
	assert.EqualError(t, err, "datasets: "+c+": line 2: blank, but line 2 of "+a+" is not")
	_, _, err = ReadParallelFiles(c, a, strict)
	assert.EqualError(t, err, "datasets: "+c+": line 2: blank, but line 2 of "+a+" is not")

	d := writeFile(t, dir, "d.de", "eins\nzwei\n\xe2\x82\n")
	_, _, err = ReadParallelFiles(a, d, strict)
	assert.EqualError(t, err, "datasets: "+d+": line 3: invalid UTF-8")

	// Lines blank in both files are skipped even when strict.
	e := writeFile(t, dir, "e.en", "one\n\nthree\n")
	pairs, rep, err := ReadParallelFiles(e, c, strict)
	require.NoError(t, err)
	assert.Equal(t, []Pair{{"one", "eins"}, {"three", "drei"}}, pairs)
	assert.Equal(t, ParallelReport{Lines: 3, Pairs: 2, Empty: 1}, rep)
}

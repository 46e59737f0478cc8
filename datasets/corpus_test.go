package datasets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readAll concatenates a corpus's chunks, checking each is valid UTF-8.
func readAll(t *testing.T, c *Corpus) (string, int) {
	t.Helper()
	var sb strings.Builder
	chunks := 0
	err := c.Each(func(text string) error {
		require.True(t, utf8.ValidString(text), "chunk %d is not valid UTF-8", chunks)
		sb.WriteString(text)
		chunks++
		return nil
	})
	require.NoError(t, err)
	return sb.String(), chunks
}

func TestOpenCorpusFile(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "a.txt", "first line\nsecond line\n")
	c, err := OpenCorpus(p, CorpusOptions{})
	require.NoError(t, err)
	abs, err := filepath.Abs(p)
	require.NoError(t, err)
	assert.Equal(t, []string{abs}, c.Files())
	assert.EqualValues(t, 23, c.Size())
	text, _ := readAll(t, c)
	assert.Equal(t, "first line\nsecond line\n", text)
}

func TestOpenCorpusDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "b.txt", "bee\n")
	writeFile(t, dir, "a.txt", "ay\n")
	writeFile(t, dir, "sub/c.md", "sea\n")
	writeFile(t, dir, ".hidden", "secret\n")
	writeFile(t, dir, ".git/config", "secret\n")
	c, err := OpenCorpus(dir, CorpusOptions{})
	require.NoError(t, err)
	var names []string
	for _, f := range c.Files() {
		rel, err := filepath.Rel(dir, f)
		require.NoError(t, err)
		names = append(names, filepath.ToSlash(rel))
	}
	assert.Equal(t, []string{"a.txt", "b.txt", "sub/c.md"}, names, "sorted, recursive, dot-names skipped")
	text, _ := readAll(t, c)
	assert.Equal(t, "ay\nbee\nsea\n", text)
}

func TestOpenCorpusGlob(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "x1.txt", "one\n")
	writeFile(t, dir, "x2.txt", "two\n")
	writeFile(t, dir, "x3.csv", "three\n")
	c, err := OpenCorpus(filepath.Join(dir, "x*.txt"), CorpusOptions{})
	require.NoError(t, err)
	require.Len(t, c.Files(), 2)
	text, _ := readAll(t, c)
	assert.Equal(t, "one\ntwo\n", text)
}

func TestOpenCorpusErrors(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty.txt", "")
	writeFile(t, dir, "empties/a.txt", "")
	writeFile(t, dir, "empties/b.txt", "")
	for name, pattern := range map[string]string{
		"no match":      filepath.Join(dir, "nothing*.txt"),
		"missing file":  filepath.Join(dir, "missing.txt"),
		"empty file":    empty,
		"all empty":     filepath.Join(dir, "empties"),
		"bad glob":      filepath.Join(dir, "[x"),
		"empty pattern": "",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := OpenCorpus(pattern, CorpusOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "open corpus")
		})
	}
	_, err := OpenCorpus(filepath.Join(dir, "nothing*.txt"), CorpusOptions{})
	assert.ErrorContains(t, err, "no files match")
	_, err = OpenCorpus(empty, CorpusOptions{})
	assert.ErrorContains(t, err, "empty")

	// One empty file among others is fine.
	writeFile(t, dir, "mixed/a.txt", "")
	writeFile(t, dir, "mixed/b.txt", "text\n")
	_, err = OpenCorpus(filepath.Join(dir, "mixed"), CorpusOptions{})
	assert.NoError(t, err)
}

func TestCorpusInvalidUTF8(t *testing.T) {
	dir := t.TempDir()
	// The bad byte sits past the first 64 KiB chunk, so the offset must be
	// counted across chunks; the file before it is valid.
	prefix := strings.Repeat("valid line\n", 7000) // 77000 bytes
	writeFile(t, dir, "a.txt", "fine\n")
	bad := writeFile(t, dir, "b.txt", prefix+"caf\xe9\n")
	c, err := OpenCorpus(dir, CorpusOptions{})
	require.NoError(t, err)
	err = c.Each(func(string) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), bad)
	assert.Contains(t, err.Error(), "invalid UTF-8 at byte offset 77003")

	c, err = OpenCorpus(bad, CorpusOptions{ReplaceInvalid: true})
	require.NoError(t, err)
	text, _ := readAll(t, c)
	assert.Equal(t, prefix+"caf\uFFFD\n", text)
}

func TestCorpusReplaceEachBadByte(t *testing.T) {
	c, err := OpenCorpus(writeFile(t, t.TempDir(), "a.txt", "a\xff\xfeb\xe2\x82"), CorpusOptions{ReplaceInvalid: true})
	require.NoError(t, err)
	text, _ := readAll(t, c)
	assert.Equal(t, "a\uFFFD\uFFFDb\uFFFD\uFFFD", text, "one U+FFFD per invalid byte, a truncated character at the end included")
}

func TestCorpusChunks(t *testing.T) {
	// A 150 kB line of two-byte characters, shifted by one byte so chunk
	// boundaries fall inside characters, then short lines.
	long := "x" + strings.Repeat("é", 75000) + "\n"
	lines := strings.Repeat("a short line\n", 10000)
	c := openText(t, long+lines)
	text, chunks := readAll(t, c)
	assert.Equal(t, long+lines, text, "chunks concatenate to the file")
	assert.Greater(t, chunks, 3)

	// Chunks end at a newline when there is one.
	c = openText(t, lines)
	err := c.Each(func(s string) error {
		assert.True(t, strings.HasSuffix(s, "\n"))
		return nil
	})
	require.NoError(t, err)
}

func TestCorpusEachStopsOnError(t *testing.T) {
	c := openText(t, strings.Repeat("line\n", 50000))
	boom := errors.New("boom")
	calls := 0
	err := c.Each(func(string) error { calls++; return boom })
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 1, calls)
	assert.Contains(t, err.Error(), "corpus.txt")
}

func TestCorpusFileRemoved(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "a.txt", "text\n")
	c, err := OpenCorpus(p, CorpusOptions{})
	require.NoError(t, err)
	require.NoError(t, os.Remove(p))
	err = c.Each(func(string) error { return nil })
	assert.ErrorIs(t, err, os.ErrNotExist)
}

package datasets

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// castagnoliSum is the checksum the cache header holds.
func castagnoliSum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// cacheFiles lists the token cache files in dir.
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "tokens-*.bin"))
	require.NoError(t, err)
	return m
}

func TestTokenizeUsesCache(t *testing.T) {
	text := strings.Repeat("the light of the prism\n", 5000) // 115 kB: several chunks
	c := openText(t, text)
	dir := filepath.Join(t.TempDir(), "cache") // created by Tokenize
	tok := &byteTokenizer{}

	first, err := Tokenize(c, tok, dir)
	require.NoError(t, err)
	assert.Greater(t, tok.encodes.Load(), int64(1))
	assert.Equal(t, len(text), first.Len())
	assert.Equal(t, int('t'), first.At(0))
	files := cacheFiles(t, dir)
	require.Len(t, files, 1)
	fi, err := os.Stat(files[0])
	require.NoError(t, err)
	assert.EqualValues(t, headerSize+2*len(text), fi.Size(), "uint16 tokens after a 64-byte header")

	tok.encodes.Store(0)
	second, err := Tokenize(c, tok, dir)
	require.NoError(t, err)
	assert.Zero(t, tok.encodes.Load(), "the second call reads the cache")
	assert.Equal(t, allIDs(t, first), allIDs(t, second))
	assert.Equal(t, 256, second.VocabSize())

	// A new tokenizer object with the same serialised form shares the cache.
	other := &byteTokenizer{}
	_, err = Tokenize(c, other, dir)
	require.NoError(t, err)
	assert.Zero(t, other.encodes.Load())
}

func TestTokenizeHeader(t *testing.T) {
	c := openText(t, "abc")
	dir := t.TempDir()
	_, err := Tokenize(c, &byteTokenizer{}, dir)
	require.NoError(t, err)
	raw, err := os.ReadFile(cacheFiles(t, dir)[0])
	require.NoError(t, err)
	require.Len(t, raw, headerSize+6)
	assert.Equal(t, "ZOOTOKS\x00", string(raw[:8]))
	assert.EqualValues(t, 5, binary.LittleEndian.Uint32(raw[8:]), "version")
	assert.EqualValues(t, 2, binary.LittleEndian.Uint32(raw[12:]), "bytes per token")
	assert.EqualValues(t, 3, binary.LittleEndian.Uint64(raw[16:]), "count")
	assert.EqualValues(t, 256, binary.LittleEndian.Uint32(raw[24:]), "vocabulary")
	assert.Equal(t, []byte{'a', 0, 'b', 0, 'c', 0}, raw[headerSize:], "little-endian uint16")
}

func TestTokenizeWideVocabulary(t *testing.T) {
	// Ids up to 70,000 do not fit uint16.
	c := openText(t, "wide ids\n")
	dir := t.TempDir()
	tok := &byteTokenizer{offset: 70000 - 256}
	first, err := Tokenize(c, tok, dir)
	require.NoError(t, err)
	assert.Equal(t, 70000-256+int('w'), first.At(0))
	raw, err := os.ReadFile(cacheFiles(t, dir)[0])
	require.NoError(t, err)
	assert.EqualValues(t, 4, binary.LittleEndian.Uint32(raw[12:]), "bytes per token")
	assert.Len(t, raw, headerSize+4*9)

	tok.encodes.Store(0)
	second, err := Tokenize(c, tok, dir)
	require.NoError(t, err)
	assert.Zero(t, tok.encodes.Load())
	assert.Equal(t, allIDs(t, first), allIDs(t, second))
}

func TestTokenizeInvalidation(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	path := writeFile(t, dir, "corpus.txt", "first version\n")
	c, err := OpenCorpus(path, CorpusOptions{})
	require.NoError(t, err)
	tok := &byteTokenizer{}
	_, err = Tokenize(c, tok, cacheDir)
	require.NoError(t, err)

	// A changed file: the old Corpus refuses, a reopened one re-tokenizes.
	require.NoError(t, os.WriteFile(path, []byte("second version, longer\n"), 0o644))
	_, err = Tokenize(c, tok, cacheDir)
	assert.ErrorContains(t, err, "changed since the corpus was opened")
	c, err = OpenCorpus(path, CorpusOptions{})
	require.NoError(t, err)
	tok.encodes.Store(0)
	got, err := Tokenize(c, tok, cacheDir)
	require.NoError(t, err)
	assert.Positive(t, tok.encodes.Load())
	back, err := tok.Decode(allIDs(t, got))
	require.NoError(t, err)
	assert.Equal(t, "second version, longer\n", back)

	// Same size, new modification time: still a different corpus.
	require.NoError(t, os.WriteFile(path, []byte("SECOND version, longer\n"), 0o644))
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(path, later, later))
	c, err = OpenCorpus(path, CorpusOptions{})
	require.NoError(t, err)
	tok.encodes.Store(0)
	got, err = Tokenize(c, tok, cacheDir)
	require.NoError(t, err)
	assert.Positive(t, tok.encodes.Load())
	assert.Equal(t, int('S'), got.At(0))

	// Another tokenizer (another serialised form) re-tokenizes.
	shifted := &byteTokenizer{offset: 10}
	got, err = Tokenize(c, shifted, cacheDir)
	require.NoError(t, err)
	assert.Positive(t, shifted.encodes.Load())
	assert.Equal(t, int('S')+10, got.At(0))

	// The replacement option is part of the key.
	c2, err := OpenCorpus(path, CorpusOptions{ReplaceInvalid: true})
	require.NoError(t, err)
	tok.encodes.Store(0)
	_, err = Tokenize(c2, tok, cacheDir)
	require.NoError(t, err)
	assert.Positive(t, tok.encodes.Load())
}

func TestTokenizeRebuildsBadCache(t *testing.T) {
	text := strings.Repeat("abcdefgh\n", 1000)
	corrupt := map[string]func(b []byte) []byte{
		"truncated":         func(b []byte) []byte { return b[:len(b)-7] },
		"header only":       func(b []byte) []byte { return b[:headerSize] },
		"half a header":     func(b []byte) []byte { return b[:20] },
		"empty":             func(b []byte) []byte { return nil },
		"flipped token bit": func(b []byte) []byte { b[headerSize+100] ^= 1; return b },
		"bad magic":         func(b []byte) []byte { b[0] = 'X'; return b },
		"other key":         func(b []byte) []byte { b[40] ^= 0xff; return b },
		"wrong count": func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[16:], 5)
			return b
		},
		"wrong width": func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[12:], 4)
			return b
		},
		"appended garbage": func(b []byte) []byte { return append(b, 1, 2) },
	}
	for name, damage := range corrupt {
		t.Run(name, func(t *testing.T) {
			c := openText(t, text)
			dir := t.TempDir()
			tok := &byteTokenizer{}
			want, err := Tokenize(c, tok, dir)
			require.NoError(t, err)
			file := cacheFiles(t, dir)[0]
			good, err := os.ReadFile(file)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(file, damage(append([]byte(nil), good...)), 0o644))

			tok.encodes.Store(0)
			got, err := Tokenize(c, tok, dir)
			require.NoError(t, err)
			assert.Positive(t, tok.encodes.Load(), "a damaged cache is not trusted")
			assert.Equal(t, allIDs(t, want), allIDs(t, got))
			again, err := os.ReadFile(file)
			require.NoError(t, err)
			assert.Equal(t, good, again, "and is rewritten")
		})
	}
}

func TestTokenizeOutOfRangeID(t *testing.T) {
	// A cache whose ids exceed the vocabulary is rejected even with a
	// matching checksum: rewrite a token and its checksum by hand.
	c := openText(t, "ab")
	dir := t.TempDir()
	tok := &byteTokenizer{}
	_, err := Tokenize(c, tok, dir)
	require.NoError(t, err)
	file := cacheFiles(t, dir)[0]
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	binary.LittleEndian.PutUint16(raw[headerSize:], 300)
	crc := castagnoliSum(raw[headerSize:])
	binary.LittleEndian.PutUint32(raw[28:], crc)
	require.NoError(t, os.WriteFile(file, raw, 0o644))
	tok.encodes.Store(0)
	got, err := Tokenize(c, tok, dir)
	require.NoError(t, err)
	assert.Positive(t, tok.encodes.Load())
	assert.Equal(t, int('a'), got.At(0))
}

func TestTokenizeWithoutCache(t *testing.T) {
	c := openText(t, "no cache\n")
	tok := &byteTokenizer{}
	got, err := Tokenize(c, tok, "")
	require.NoError(t, err)
	assert.Equal(t, 9, got.Len())
	_, err = Tokenize(c, tok, "")
	require.NoError(t, err)
	assert.EqualValues(t, 2, tok.encodes.Load(), "no cache dir, no cache")
}

func TestTokenizeErrors(t *testing.T) {
	c := openText(t, "text with ! in it\n")
	// A character tokenizer in the zoo-char format, which has no unknown
	// token, fails on "!".
	chars, err := parseChar([]byte(`{"type": "zoo-char", "version": 1, "chars": [" ", "e", "h", "i", "t", "w", "x"]}`))
	require.NoError(t, err)
	_, err = Tokenize(c, chars, t.TempDir())
	assert.ErrorContains(t, err, "not in the vocabulary")
	assert.ErrorContains(t, err, "corpus.txt")
}

func TestTokenizeBPEOpticks(t *testing.T) {
	c, err := OpenCorpus(opticksPath(t), CorpusOptions{})
	require.NoError(t, err)
	tok, err := TrainBPE(c, 512, []string{"<|endoftext|>"})
	require.NoError(t, err)
	dir := t.TempDir()
	first, err := Tokenize(c, tok, dir)
	require.NoError(t, err)
	text, err := tok.Decode(allIDs(t, first))
	require.NoError(t, err)
	assert.Equal(t, opticks(t), text, "chunked tokenization decodes to the corpus")

	start := time.Now()
	second, err := Tokenize(c, tok, dir)
	require.NoError(t, err)
	t.Logf("%d tokens: read from the cache in %v", second.Len(), time.Since(start))
	assert.Equal(t, allIDs(t, first), allIDs(t, second))
}

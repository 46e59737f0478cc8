package datasets

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/d73a19ff/zoo/internal/goroot"
	"github.com/stretchr/testify/require"
)

// opticksPath returns Isaac Newton's Opticks as shipped with the Go
// toolchain (src/testdata, used by the standard library's compress tests),
// or skips the test when this toolchain does not have it.
func opticksPath(t testing.TB) string {
	t.Helper()
	p := goroot.Opticks()
	if _, err := os.Stat(p); err != nil {
		t.Skipf("Opticks not found in this Go toolchain (%v); it ships at $GOROOT/src/testdata", err)
	}
	return p
}

// opticks returns the text of Opticks (or skips).
func opticks(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(opticksPath(t))
	require.NoError(t, err)
	return string(b)
}

// writeFile writes content to dir/name, creating directories, and returns
// the path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// openText writes content to a fresh file and opens it as a corpus.
func openText(t testing.TB, content string) *Corpus {
	t.Helper()
	c, err := OpenCorpus(writeFile(t, t.TempDir(), "corpus.txt", content), CorpusOptions{})
	require.NoError(t, err)
	return c
}

// byteTokenizer maps each byte b to the id b+offset, so offset > 65280
// makes a vocabulary that needs uint32. It counts its Encode calls, which
// is how the cache tests see whether Tokenize tokenized.
type byteTokenizer struct {
	offset  int
	encodes atomic.Int64
}

func (b *byteTokenizer) Encode(text string) ([]int, error) {
	b.encodes.Add(1)
	ids := make([]int, len(text))
	for i := range len(text) {
		ids[i] = int(text[i]) + b.offset
	}
	return ids, nil
}

func (b *byteTokenizer) Decode(ids []int) (string, error) {
	out := make([]byte, len(ids))
	for i, id := range ids {
		if id < b.offset || id >= b.offset+256 {
			return "", fmt.Errorf("id %d out of range", id)
		}
		out[i] = byte(id - b.offset)
	}
	return string(out), nil
}

func (b *byteTokenizer) VocabSize() int { return 256 + b.offset }

func (b *byteTokenizer) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]int{"byte_offset": b.offset})
}

func (b *byteTokenizer) Save(path string) error {
	raw, _ := b.MarshalJSON()
	return os.WriteFile(path, raw, 0o644)
}

// allIDs returns every id of t.
func allIDs(t testing.TB, toks *Tokens) []int {
	t.Helper()
	ids, err := toks.IDs(0, toks.Len())
	require.NoError(t, err)
	return ids
}

package datasets

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCharTokenizer(t *testing.T) {
	tok, err := NewCharTokenizer(openText(t, "hello world\n"))
	require.NoError(t, err)
	// Sorted by code point: \n, space, d, e, h, l, o, r, w.
	assert.Equal(t, 9, tok.VocabSize())
	ids, err := tok.Encode("hello")
	require.NoError(t, err)
	assert.Equal(t, []int{4, 3, 5, 5, 6}, ids)
	text, err := tok.Decode([]int{8, 6, 7, 5, 2, 0})
	require.NoError(t, err)
	assert.Equal(t, "world\n", text)

	_, err = tok.Encode("held!")
	assert.ErrorContains(t, err, `character '!' at byte offset 4 is not in the vocabulary`)
	_, err = tok.Decode([]int{9})
	assert.ErrorContains(t, err, "outside [0, 9)")
	_, err = tok.Decode([]int{-1})
	assert.Error(t, err)
}

func TestCharTokenizerOpticks(t *testing.T) {
	text := opticks(t)
	c, err := OpenCorpus(opticksPath(t), CorpusOptions{})
	require.NoError(t, err)
	tok, err := NewCharTokenizer(c)
	require.NoError(t, err)
	ids, err := tok.Encode(text)
	require.NoError(t, err)
	back, err := tok.Decode(ids)
	require.NoError(t, err)
	assert.Equal(t, text, back)
	assert.Less(t, tok.VocabSize(), 256, "Opticks has fewer than 256 distinct characters")
}

func TestCharTokenizerSaveLoad(t *testing.T) {
	tok, err := NewCharTokenizer(openText(t, "naïve 🙂 <tag> \"q\"\t\n"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "chars.json")
	require.NoError(t, tok.Save(path))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"type":"zoo-char"`)
	assert.Contains(t, string(raw), `"<"`, "not HTML-escaped")

	loaded, err := LoadTokenizer(path)
	require.NoError(t, err)
	s := "naïve <🙂>\t\"tag\"\n"
	want, err := tok.Encode(s)
	require.NoError(t, err)
	got, err := loaded.Encode(s)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	again, err := loaded.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, raw, again)
}

func TestCharTokenizerReplacementCharacter(t *testing.T) {
	c, err := OpenCorpus(writeFile(t, t.TempDir(), "a.txt", "ab\xff"), CorpusOptions{ReplaceInvalid: true})
	require.NoError(t, err)
	tok, err := NewCharTokenizer(c)
	require.NoError(t, err)
	ids, err := tok.Encode("b\uFFFD")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, ids)
}

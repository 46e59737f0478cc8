package datasets

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// WordPiece counts the words it maps to [UNK] (UnknownCounter), so the
// pipelines' note fires for BERT: a word with a piece outside the
// vocabulary and a word past max_input_chars_per_word count once each;
// "[UNK]" written in the text (an added token) does not count.
func TestWordPieceCountsUnknownWords(t *testing.T) {
	vocab := filepath.Join(t.TempDir(), "vocab.txt")
	require.NoError(t, os.WriteFile(vocab, []byte(strings.Join([]string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s", "."}, "\n")), 0o644))
	wp, err := LoadWordPieceVocab(vocab, true)
	require.NoError(t, err)
	var _ UnknownCounter = wp
	for _, c := range []struct {
		name, text string
		unknown    int
	}{
		{"known words", "The cats sat.", 0},
		{"a word with a piece outside the vocabulary", "the dog sat", 1},
		{"two of them, and a character", "the dog saw ☃", 3},
		{"[UNK] written in the text", "the [UNK] sat", 0},
		{"a word past max_input_chars_per_word", "the " + strings.Repeat("cat", 40), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := wp.Unknown()
			ids, err := wp.Encode(c.text)
			require.NoError(t, err)
			require.Equal(t, c.unknown, wp.Unknown()-before, "%v", ids)
			n := 0
			for _, id := range ids {
				if id == 1 {
					n++
				}
			}
			if !strings.Contains(c.text, "[UNK]") {
				require.Equal(t, n, c.unknown, "one [UNK] per unknown word")
			}
			note := UnknownNoteFor(wp, wp.Unknown()-before, "the texts")
			if c.unknown == 0 {
				require.Empty(t, note)
			} else if c.unknown == 1 {
				require.Contains(t, note, "1 word of the texts is not in the tokenizer's vocabulary and was mapped to [UNK]")
			} else {
				require.Contains(t, note, "words of the texts are not in the tokenizer's vocabulary and were mapped to [UNK]")
			}
		})
	}

	// The pair, special-token and word-offset encoders count too, and the
	// count is safe for concurrent use.
	before := wp.Unknown()
	_, _, err = wp.EncodePair("the dog", "a cat")
	require.NoError(t, err)
	_, _, err = wp.EncodeWithSpecials("dog")
	require.NoError(t, err)
	_, _, err = wp.EncodeWords("the dog sat")
	require.NoError(t, err)
	require.Equal(t, 4, wp.Unknown()-before)
	before = wp.Unknown()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				_, _ = wp.Encode("dog sat")
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 400, wp.Unknown()-before)
}

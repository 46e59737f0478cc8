package seq2seq

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
)

// examples of 1 to 12 tokens, so that batches fall in several buckets.
func examples(n int, seed uint64) []Example {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]Example, n)
	for i := range out {
		l := 1 + rng.IntN(12)
		for range l {
			out[i].Src = append(out[i].Src, 4+rng.IntN(20))
		}
		for _, id := range out[i].Src {
			out[i].Tgt = append(out[i].Tgt, 4+(id+1)%20)
		}
	}
	return out
}

func tinyConfig() Config {
	c := Tiny()
	c.SrcVocabSize, c.TgtVocabSize, c.Dropout = 24, 24, 0.1
	return c
}

func TestEncodeCountsOverlong(t *testing.T) {
	tok, err := TrainTokenizer([]string{"a b c d e f g h", "one two three", "eins zwei drei"}, 300)
	require.NoError(t, err)
	require.Equal(t, "<pad>", mustDecode(t, tok, 0))
	long := strings.Repeat("a b c d e f g h ", 4)
	pairs := []datasets.Pair{{Src: long, Tgt: "a"}, {Src: "one", Tgt: "eins"}, {Src: "two three", Tgt: "zwei drei"}}
	limit := 0 // the longest of the short sides
	for _, s := range []string{"a", "one", "eins", "two three", "zwei drei"} {
		ids, err := tok.Encode(s)
		require.NoError(t, err)
		limit = max(limit, len(ids))
	}
	ex, rep, err := Encode(tok, pairs, limit+1, Truncate)
	require.NoError(t, err)
	require.Equal(t, EncodeReport{Pairs: 3, Truncated: 1}, rep)
	require.Len(t, ex[0].Src, limit)
	ex, rep, err = Encode(tok, pairs, limit+1, Skip)
	require.NoError(t, err)
	require.Equal(t, EncodeReport{Pairs: 2, Skipped: 1}, rep)
	require.Len(t, ex, 2)
	_, _, err = Encode(tok, pairs, limit+1, "drop")
	require.ErrorContains(t, err, "truncate")
}

func mustDecode(t *testing.T, tok datasets.Tokenizer, id int) string {
	s, err := tok.Decode([]int{id})
	require.NoError(t, err)
	return s
}

// Output text leaves out the special tokens, as Hugging Face's
// decode(skip_special_tokens=True): pad, the decoder start, eos and
// <mask>.
func TestTranslateSkipsSpecialTokens(t *testing.T) {
	tok, err := TrainTokenizer([]string{"the cat sat", "a dog ran", "the dog sat"}, 300)
	require.NoError(t, err)
	c := Tiny()
	c.SrcVocabSize, c.TgtVocabSize = tok.VocabSize(), tok.VocabSize()
	m, err := New(c)
	require.NoError(t, err)
	special := specialIDs(m, tok)
	require.Equal(t, map[int]bool{0: true, 1: true, 2: true, 3: true}, special)
	ids, err := tok.Encode("the cat")
	require.NoError(t, err)
	mixed := append(append([]int{1, 3}, ids[:1]...), append([]int{0}, append(ids[1:], 2)...)...)
	text, err := tok.Decode(skipSpecial(mixed, special))
	require.NoError(t, err)
	require.Equal(t, "the cat", strings.TrimSpace(text))
	withSpecials, err := tok.Decode(mixed)
	require.NoError(t, err)
	require.NotEqual(t, "the cat", strings.TrimSpace(withSpecials))

	m.Config.BOSTokenID = 0 // Marian starts decoding with <pad>
	require.Equal(t, map[int]bool{0: true, 2: true, 3: true}, specialIDs(m, tok))
}

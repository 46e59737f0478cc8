package datasets

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingTokens returns the stream 0, 1, …, n-1 (mod vocab), so a token's
// value tells its position.
func countingTokens(t *testing.T, n, vocab int) *Tokens {
	t.Helper()
	toks := newTokens(vocab, n)
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i % vocab
	}
	require.NoError(t, toks.appendIDs(ids))
	return toks
}

func TestBatcherShapes(t *testing.T) {
	for _, vocab := range []int{1 << 16, 1<<16 + 1} { // uint16 and uint32 storage
		toks := countingTokens(t, 5000, vocab)
		b, err := NewBatcher(toks, 4, 16, 1)
		require.NoError(t, err)
		assert.Equal(t, 4, b.Batch())
		assert.Equal(t, 16, b.Block())
		for range 50 {
			x, y := b.Next()
			require.Len(t, x, 4*16)
			require.Len(t, y, 4*16)
			for r := range 4 {
				row := x[r*16 : (r+1)*16]
				for j := range 16 {
					assert.Equal(t, row[0]+j, row[j], "a row is a contiguous window")
					assert.Equal(t, x[r*16+j]+1, y[r*16+j], "y is x shifted by one")
				}
			}
		}
	}
}

func TestBatcherCoversEveryOffset(t *testing.T) {
	// 12 tokens, T = 4: offsets 0 … 7; the last target is the last token.
	toks := countingTokens(t, 12, 100)
	b, err := NewBatcher(toks, 8, 4, 3)
	require.NoError(t, err)
	seen := map[int]int{}
	for range 200 {
		x, y := b.Next()
		for r := range 8 {
			seen[x[r*4]]++
			assert.LessOrEqual(t, y[r*4+3], 11)
		}
	}
	assert.Len(t, seen, 8)
	for off := range 8 {
		// 1600 draws over 8 offsets: 200 expected, sd ≈ 13.
		assert.InDelta(t, 200, seen[off], 80, "offset %d", off)
	}
}

func TestBatcherSeeds(t *testing.T) {
	toks := countingTokens(t, 10000, 1000)
	a, err := NewBatcher(toks, 8, 32, 42)
	require.NoError(t, err)
	b, err := NewBatcher(toks, 8, 32, 42)
	require.NoError(t, err)
	c, err := NewBatcher(toks, 8, 32, 43)
	require.NoError(t, err)
	for range 10 {
		xa, ya := a.Next()
		xb, yb := b.Next()
		xc, _ := c.Next()
		assert.Equal(t, xa, xb)
		assert.Equal(t, ya, yb)
		assert.NotEqual(t, xa, xc)
	}
}

func TestBatcherStateRestore(t *testing.T) {
	toks := countingTokens(t, 10000, 1000)
	b, err := NewBatcher(toks, 4, 8, 7)
	require.NoError(t, err)
	for range 5 {
		b.Next()
	}
	state, err := b.State()
	require.NoError(t, err)
	var want [][]int
	for range 5 {
		x, _ := b.Next()
		want = append(want, x)
	}

	// A new Batcher (another seed, as a resumed run would build it before
	// restoring) continues exactly where the state was taken.
	resumed, err := NewBatcher(toks, 4, 8, 999)
	require.NoError(t, err)
	require.NoError(t, resumed.Restore(state))
	for i := range 5 {
		x, _ := resumed.Next()
		assert.Equal(t, want[i], x, "batch %d after restore", i)
	}

	assert.Error(t, resumed.Restore([]byte("garbage")))
	assert.Error(t, resumed.Restore(nil))
}

func TestBatcherNextInto(t *testing.T) {
	toks := countingTokens(t, 1000, 1000)
	a, _ := NewBatcher(toks, 2, 5, 1)
	b, _ := NewBatcher(toks, 2, 5, 1)
	x, y := make([]int, 10), make([]int, 10)
	require.NoError(t, a.NextInto(x, y))
	wx, wy := b.Next()
	assert.Equal(t, wx, x)
	assert.Equal(t, wy, y)
	assert.Error(t, a.NextInto(make([]int, 9), y))
}

func TestBatcherErrors(t *testing.T) {
	toks := countingTokens(t, 10, 100)
	_, err := NewBatcher(toks, 1, 10, 0)
	assert.ErrorContains(t, err, "block 10 needs at least 11 tokens, have 10")
	_, err = NewBatcher(toks, 1, 9, 0)
	assert.NoError(t, err, "block = Len-1 leaves one offset")
	_, err = NewBatcher(toks, 0, 4, 0)
	assert.Error(t, err)
	_, err = NewBatcher(toks, 2, -1, 0)
	assert.Error(t, err)
	_, err = NewBatcher(nil, 2, 2, 0)
	assert.Error(t, err)
}

func TestSplit(t *testing.T) {
	toks := countingTokens(t, 1000, 1000)
	train, val, err := toks.Split(0.1)
	require.NoError(t, err)
	assert.Equal(t, 900, train.Len())
	assert.Equal(t, 100, val.Len())
	assert.Equal(t, 0, train.At(0))
	assert.Equal(t, 900, val.At(0), "val follows train")
	assert.Equal(t, 999, val.At(99))
	assert.Equal(t, 1000, val.VocabSize())
	joined := append(allIDs(t, train), allIDs(t, val)...)
	assert.Equal(t, allIDs(t, toks), joined)

	for _, f := range []float64{0, 1, -0.1, 1.5, math.NaN()} {
		_, _, err := toks.Split(f)
		assert.Error(t, err, "fraction %v", f)
	}
	small := countingTokens(t, 3, 10)
	_, _, err = small.Split(0.9)
	assert.ErrorContains(t, err, "leave one part empty")

	_, err = toks.IDs(5, 1001)
	assert.Error(t, err)
	_, err = toks.IDs(-1, 3)
	assert.Error(t, err)
}

func TestAppendIDsRejectsOutOfRange(t *testing.T) {
	toks := newTokens(10, 0)
	assert.Error(t, toks.appendIDs([]int{3, 10}))
	assert.Error(t, toks.appendIDs([]int{-1}))
}

package datasets

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// BenchmarkEncodeOpticks encodes the whole of Opticks (≈0.6 MB) with a
// byte-level BPE trained on it by TrainBPE, and with the character
// tokenizer. The tokenizers are built once, outside the timing, so after
// the first iteration the BPE's word cache holds every word; "cold" loads
// the BPE afresh (untimed) before each encode, so every word is merged
// once. MB/s is input text per second.
func BenchmarkEncodeOpticks(b *testing.B) {
	text := opticks(b)
	c, err := OpenCorpus(opticksPath(b), CorpusOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, vocab := range []int{2048} {
		tok, err := TrainBPE(c, vocab, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("bpe-%d", vocab), func(b *testing.B) { benchEncode(b, tok, text) })
		raw, err := tok.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("bpe-%d-cold", vocab), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				b.StopTimer()
				fresh, err := parseTokenizer(raw)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := fresh.Encode(text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	char, err := NewCharTokenizer(c)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("char", func(b *testing.B) { benchEncode(b, char, text) })
}

// benchEncode times tok.Encode(text), reporting MB/s and tokens per byte.
func benchEncode(b *testing.B, tok Tokenizer, text string) {
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	var n int
	for b.Loop() {
		ids, err := tok.Encode(text)
		if err != nil {
			b.Fatal(err)
		}
		n = len(ids)
	}
	b.ReportMetric(float64(n)/float64(len(text)), "tokens/byte")
}

// Encode may be called from several goroutines at once: the BPE's word
// cache is used by one of them at a time, and the character tokenizer's
// count is atomic. Run with -race.
func TestEncodeConcurrent(t *testing.T) {
	c, heldOut := opticksSplit(t)
	bpe, err := TrainBPE(c, 400, nil)
	require.NoError(t, err)
	char, err := NewCharTokenizer(openText(t, "abc"))
	require.NoError(t, err)
	text := heldOut[:20000]
	for _, tok := range []Tokenizer{bpe, char} {
		want, err := tok.Encode(text)
		require.NoError(t, err)
		var wg sync.WaitGroup
		got := make([][]int, 4)
		for g := range got {
			wg.Go(func() {
				ids, err := tok.Encode(text)
				assert.NoError(t, err)
				got[g] = ids
			})
		}
		wg.Wait()
		for g := range got {
			assert.Equal(t, want, got[g])
		}
	}
	// Every character of the text but a, b and c was unknown, five times.
	n := 0
	for _, r := range text {
		if r < 'a' || r > 'c' {
			n++
		}
	}
	assert.Equal(t, 5*n, char.(UnknownCounter).Unknown())
}

package datasets

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bigText returns about n bytes of random lowercase words of 2 to 9
// letters, 12 to a line: many distinct words and pairs, so that counting
// and merging take seconds.
func bigText(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 2))
	var sb strings.Builder
	sb.Grow(n + 16)
	for i := 0; sb.Len() < n; i++ {
		for range 2 + r.IntN(8) {
			sb.WriteByte(byte('a' + r.IntN(26)))
		}
		if i%12 == 11 {
			sb.WriteString(".\n")
		} else {
			sb.WriteByte(' ')
		}
	}
	return sb.String()
}

// cancelAfter runs fn with a context cancelled after 100 ms and returns
// fn's error and how long fn went on after the cancellation.
func cancelAfter(t *testing.T, fn func(ctx context.Context) error) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var cancelled time.Time
	timer := time.AfterFunc(100*time.Millisecond, func() { cancelled = time.Now(); cancel() })
	defer timer.Stop()
	err := fn(ctx)
	if cancelled.IsZero() {
		t.Fatalf("finished before the cancellation (err %v): make the input bigger", err)
	}
	return time.Since(cancelled), err
}

// An interrupt stops BPE training promptly, while counting words (8 MB
// take seconds to count) and while merging.
func TestTrainBPEContextCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("writes an 8 MB corpus")
	}
	c := openText(t, bigText(1, 8<<20))
	late, err := cancelAfter(t, func(ctx context.Context) error {
		_, err := TrainBPEContext(ctx, c, 30000, nil)
		return err
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, late, time.Second)

	// In the merge loop: the words of texts in memory are counted quickly,
	// then thousands of merges are learned.
	texts := strings.Split(bigText(2, 2<<20), "\n")
	late, err = cancelAfter(t, func(ctx context.Context) error {
		_, err := TrainBPETextsContext(ctx, texts, 60000, nil)
		return err
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, late, time.Second)
}

func TestTokenizeContextCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 16 MB corpus")
	}
	c := openText(t, bigText(3, 16<<20))
	dir := t.TempDir()
	late, err := cancelAfter(t, func(ctx context.Context) error {
		_, err := TokenizeContext(ctx, c, &slowTokenizer{}, dir)
		return err
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, late, time.Second)
	_, err = TokenizeContext(t.Context(), c, &byteTokenizer{}, "") // an uncancelled context still works
	require.NoError(t, err)
}

// A cancelled context stops reading before the first chunk.
func TestEachContextCancelled(t *testing.T) {
	c := openText(t, "a\nb\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := c.EachContext(ctx, func(string) error { called = true; return nil })
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, called)
}

// slowTokenizer is a byte tokenizer that takes 1 ms per chunk, so that a
// 16 MB corpus (256 chunks) takes a quarter of a second or more.
type slowTokenizer struct{ byteTokenizer }

func (*slowTokenizer) Encode(text string) ([]int, error) {
	time.Sleep(time.Millisecond)
	ids := make([]int, len(text))
	for i := range len(text) {
		ids[i] = int(text[i])
	}
	return ids, nil
}

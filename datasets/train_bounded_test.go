package datasets

import (
	"context"
	"runtime"
	"testing"
)

// TestTrainVocabSizeIsAnUpperBound checks that the trainers treat the
// vocabulary size as an upper bound and reserve no memory by it (issue 34:
// `zoo pretrain bert --vocab-size 1000000000` ran out of memory because the
// WordPiece trainer sized a map by it). A corpus of a few words learns a
// few tokens whatever the bound, in a few MB.
func TestTrainVocabSizeIsAnUpperBound(t *testing.T) {
	texts := []string{"the cat sat on the mat", "the dog sat on the log", "a cat and a dog"}
	const huge = 1 << 24 // sizing a map by it reserves hundreds of MB
	cases := []struct {
		name  string
		train func() (int, error)
	}{
		{"wordpiece", func() (int, error) {
			tok, err := TrainWordPieceTexts(context.Background(), texts, WordPieceOptions{VocabSize: huge, Lowercase: true})
			if err != nil {
				return 0, err
			}
			return tok.VocabSize(), nil
		}},
		{"bpe", func() (int, error) {
			tok, err := TrainBPETexts(texts, huge, []string{"<pad>"})
			if err != nil {
				return 0, err
			}
			return tok.VocabSize(), nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			n, err := c.train()
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			if n >= 400 {
				t.Errorf("%d tokens learnt from a few words", n)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
				t.Errorf("training allocated %d MB for a vocabulary of %d tokens: the size bound must not reserve memory", alloc>>20, n)
			}
		})
	}
}

package datasets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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
		{"llama-bpe", func() (int, error) {
			tok, err := trainLlamaBPE(context.Background(), textList(texts), LlamaBPEOptions{VocabSize: MaxLlamaBPEVocab})
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

// TestCorpusCheckText: a corpus of blank lines is empty, and the error
// names its file (issue 34: it was reported as a vocabulary problem).
func TestCorpusCheckText(t *testing.T) {
	cases := []struct {
		name  string
		files []string // contents
		empty bool
	}{
		{"blank lines", []string{"\n\n\n"}, true},
		{"spaces, tabs and CRLF", []string{" \t\r\n  \r\n\u00a0\n"}, true},
		{"two blank files", []string{"\n", "\n\n"}, true},
		{"text", []string{"the fox\n"}, false},
		{"text in the second file", []string{"\n\n", "\n fox\n"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for i, body := range c.files {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.txt", i)), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			corpus, err := OpenCorpus(dir, CorpusOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = corpus.CheckText(context.Background())
			if !c.empty {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "is empty") || !strings.Contains(err.Error(), filepath.Join(dir, "0.txt")) {
				t.Fatalf("got %v, want an error saying the corpus is empty, naming %s", err, filepath.Join(dir, "0.txt"))
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("fox"), 0o644); err != nil {
			t.Fatal(err)
		}
		corpus, err := OpenCorpus(dir, CorpusOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := corpus.CheckText(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	})
}

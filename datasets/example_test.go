package datasets_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
)

// The whole pipeline: corpus, tokenizer, cached tokens, split, batches.
func Example() {
	dir, err := os.MkdirTemp("", "datasets-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	text := strings.Repeat("to be or not to be\n", 100)
	if err := os.WriteFile(filepath.Join(dir, "corpus.txt"), []byte(text), 0o644); err != nil {
		fmt.Println(err)
		return
	}

	c, err := datasets.OpenCorpus(filepath.Join(dir, "*.txt"), datasets.CorpusOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	tok, err := datasets.NewCharTokenizer(c)
	if err != nil {
		fmt.Println(err)
		return
	}
	toks, err := datasets.Tokenize(c, tok, filepath.Join(dir, "cache"))
	if err != nil {
		fmt.Println(err)
		return
	}
	train, val, err := toks.Split(0.1)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := datasets.NewBatcher(train, 2, 8, 1) // B = 2, T = 8
	if err != nil {
		fmt.Println(err)
		return
	}
	x, y := b.Next()
	xs, _ := tok.Decode(x[:8])
	ys, _ := tok.Decode(y[:8])
	fmt.Println("vocabulary:", tok.VocabSize(), "tokens:", toks.Len(), "train:", train.Len(), "val:", val.Len())
	fmt.Println("batch:", len(x), len(y))
	fmt.Printf("x row 0: %q\ny row 0: %q\n", xs, ys)
	// Output:
	// vocabulary: 9 tokens: 1900 train: 1710 val: 190
	// batch: 16 16
	// x row 0: "r not to"
	// y row 0: " not to "
}

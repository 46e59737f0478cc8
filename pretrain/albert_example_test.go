package pretrain_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/pretrain"
)

// ALBERT's sentence-order pairs: two consecutive segments of a document,
// swapped half the time (label 1). pretrain.RunBERT makes them, and an
// AlbertForPreTraining, for a BERTConfig whose ModelType is
// pretrain.AlbertModelType (zoo pretrain bert --model-type albert).
func ExampleMakeSOPPairs() {
	dir, err := os.MkdirTemp("", "sop")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var text strings.Builder
	for _, n := range []string{"one", "two", "three", "four", "five", "six", "seven", "eight"} {
		fmt.Fprintf(&text, "the fox counts to %s.\n", n)
	}
	path := filepath.Join(dir, "corpus.txt")
	if err := os.WriteFile(path, []byte(text.String()), 0o644); err != nil {
		log.Fatal(err)
	}
	c, err := datasets.OpenCorpus(path, datasets.CorpusOptions{})
	if err != nil {
		log.Fatal(err)
	}
	tok, err := datasets.TrainWordPiece(context.Background(), c, datasets.WordPieceOptions{VocabSize: 100, Lowercase: true})
	if err != nil {
		log.Fatal(err)
	}
	docs, err := pretrain.ReadBERTDocuments(context.Background(), c, tok)
	if err != nil {
		log.Fatal(err)
	}
	sp, err := pretrain.BERTSpecialsOf(tok)
	if err != nil {
		log.Fatal(err)
	}
	cfg := pretrain.DefaultBERTPairs()
	cfg.MaxSeqLength, cfg.ShortSeqProb, cfg.DupeFactor = 24, 0, 10
	pairs, err := pretrain.MakeSOPPairs(docs, sp, cfg, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("one document:", docs.NumDocuments(), "; some swapped:", pairs.RandomNext > 0 && pairs.RandomNext < pairs.Len())
	e := pairs.Masked(0, sp, cfg, 1, 0)
	fmt.Println("sentence_order_label of the first:", map[bool]int{false: 0, true: 1}[e.RandomNext], "; segments 0 and 1:", e.TokenTypes[0] == 0 && e.TokenTypes[len(e.TokenTypes)-1] == 1)
	fmt.Println("model type:", pretrain.AlbertModelType)
	// Output:
	// one document: 1 ; some swapped: true
	// sentence_order_label of the first: 1 ; segments 0 and 1: true
	// model type: albert
}

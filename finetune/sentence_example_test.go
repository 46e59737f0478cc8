package finetune_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/finetune"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// Fine-tune sentence embeddings on (anchor, positive) pairs with in-batch
// negatives; the final checkpoint is a sentence-transformers folder.
func ExampleRunSentencePairs() {
	dir, err := os.MkdirTemp("", "zoo-pairs")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	// Pairs: "apple river" goes with "zuk mepo", a word-for-word map.
	a, b := []string{"apple", "river", "stone", "cloud", "horse"}, []string{"zuk", "mepo", "tirran", "olq", "fesh"}
	var tsv strings.Builder
	var texts []string
	for i := range a {
		for j := range a {
			fmt.Fprintf(&tsv, "%s %s\t%s %s\n", a[i], a[j], b[i], b[j])
			texts = append(texts, a[i]+" "+a[j], b[i]+" "+b[j])
		}
	}
	pairs := filepath.Join(dir, "pairs.tsv")
	if err := os.WriteFile(pairs, []byte(tsv.String()), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	// A tiny untrained BERT with a WordPiece of the pairs' words, in place
	// of a pretrained checkpoint.
	tok, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: 100, MinFrequency: 1, Lowercase: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := bert.Tiny()
	c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.IntermediateSize, c.VocabSize, c.MaxPositionEmbeddings = 1, 16, 2, 32, tok.VocabSize(), 16
	m, err := bert.New(c, layers.WithSeed(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	ckpt := filepath.Join(dir, "ckpt")
	if err := models.SaveText(ckpt, m, tok); err != nil {
		fmt.Println(err)
		return
	}

	cfg := finetune.DefaultSentencePairs() // mean pooling, scale 20
	cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = ckpt, pairs, filepath.Join(dir, "run")
	cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.LearningRate, cfg.ValFraction = 4, 10, 2, 10, 3e-3, 0.2
	res, err := finetune.RunSentencePairs(context.Background(), cfg, io.Discard)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d steps; recall@1 over %d validation pairs in [0, 1]: %v\n", res.Steps, res.Retrieval.Pairs, res.Retrieval.RecallAt1 >= 0 && res.Retrieval.RecallAt1 <= 1)
	_, err = bert.LoadSentenceEmbeddings(res.Final)
	fmt.Println("final checkpoint loads as sentence embeddings:", err == nil)
	// Output:
	// 10 steps; recall@1 over 5 validation pairs in [0, 1]: true
	// final checkpoint loads as sentence embeddings: true
}

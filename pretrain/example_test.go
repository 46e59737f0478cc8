package pretrain_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/pretrain"
	"github.com/d73a19ff/zoo/train"
)

// BERT pretraining as a recipe on the run skeleton: train.Run owns the run
// directory, run.json, resume and the engine; the recipe the corpus, the
// WordPiece, the sentence pairs and the model. pretrain.RunBERT does the
// same and returns the held-out MLM and NSP figures.
func ExampleNewBERTRecipe() {
	dir, err := os.MkdirTemp("", "bert")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var corpus strings.Builder // one sentence a line, a blank line between documents
	for d, c := range []string{"red", "blue", "green", "gold", "black", "white"} {
		if d > 0 {
			corpus.WriteString("\n")
		}
		for _, a := range []string{"fox", "cat", "owl", "dog"} {
			fmt.Fprintf(&corpus, "the %s %s runs to the %s den.\n", c, a, c)
		}
	}
	cfg := pretrain.DefaultBERT()
	cfg.Corpus, cfg.OutputDir = filepath.Join(dir, "corpus.txt"), filepath.Join(dir, "run")
	if err := os.WriteFile(cfg.Corpus, []byte(corpus.String()), 0o644); err != nil {
		log.Fatal(err)
	}
	cfg.VocabSize, cfg.MaxSeqLength, cfg.MaxPredictions, cfg.ValFraction = 100, 16, 3, 0.3
	cfg.Model = bert.Tiny()
	cfg.Model.NumHiddenLayers, cfg.Model.HiddenSize, cfg.Model.IntermediateSize, cfg.Model.MaxPositionEmbeddings = 1, 16, 32, 16
	cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps = 4, 2, 0, 2, 0

	ctx := context.Background()
	recipe, err := pretrain.NewBERTRecipe(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	res, err := train.Run(ctx, cfg.Args, recipe, io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	_, err = os.Stat(filepath.Join(cfg.OutputDir, "vocab.txt"))
	fmt.Println(res.Steps, "steps; vocab.txt written:", err == nil)
	// Output: 2 steps; vocab.txt written: true
}

// MAE pretraining as a recipe: Close the recipe after train.Run (its
// Build starts the image loader). pretrain.RunViTMAE does the same and
// returns the mean predictor's MSE and the reconstruction picture.
func ExampleNewMAERecipe() {
	dir, err := os.MkdirTemp("", "mae")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	imgs := &datasets.IDXImages{N: 64, Rows: 8, Cols: 8, Pix: make([]uint8, 64*64)}
	for i := range imgs.Pix {
		imgs.Pix[i] = uint8(i * 7 % 251)
	}
	cfg := pretrain.DefaultMAE()
	cfg.Data, cfg.OutputDir = filepath.Join(dir, "images-idx3-ubyte"), filepath.Join(dir, "run")
	if err := datasets.WriteIDXImages(cfg.Data, imgs, false); err != nil {
		log.Fatal(err)
	}
	m := &cfg.Model
	m.ImageSize, m.PatchSize, m.HiddenSize, m.NumHiddenLayers, m.NumAttentionHeads, m.IntermediateSize = 8, 2, 16, 1, 2, 32
	m.DecoderHiddenSize, m.DecoderNumHiddenLayers, m.DecoderNumAttentionHeads, m.DecoderIntermediateSize = 16, 1, 2, 32
	cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps, cfg.ValFraction, cfg.Pictures = 8, 2, 0, 2, 0, 0.2, 2

	ctx := context.Background()
	recipe, err := pretrain.NewMAERecipe(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer recipe.Close()
	res, err := train.Run(ctx, cfg.Args, recipe, io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	_, err = os.Stat(filepath.Join(cfg.OutputDir, "reconstructions.png"))
	fmt.Println(res.Steps, "steps; reconstructions drawn:", err == nil)
	// Output: 2 steps; reconstructions drawn: true
}

// GPT pretraining as a recipe on the run skeleton, here on a tiny model
// for a few steps; the samples it generates at the end are the recipe's.
// pretrain.RunGPT does the same.
func ExampleNewGPTRecipe() {
	dir, err := os.MkdirTemp("", "gpt")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := pretrain.DefaultGPT()
	cfg.Corpus, cfg.OutputDir = filepath.Join(dir, "corpus.txt"), filepath.Join(dir, "run")
	if err := os.WriteFile(cfg.Corpus, []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 100)), 0o644); err != nil {
		log.Fatal(err)
	}
	cfg.Model.NLayer, cfg.Model.NHead, cfg.Model.NEmbd, cfg.Model.NPositions = 1, 2, 16, 16
	cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps = 4, 5, 1, 5, 0
	cfg.Samples, cfg.SampleLen = 1, 10

	ctx := context.Background()
	recipe, err := pretrain.NewGPTRecipe(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	res, err := train.Run(ctx, cfg.Args, recipe, io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Steps, "steps;", len(recipe.Samples), "sample")
	// Output: 5 steps; 1 sample
}

// RoBERTa pretraining: BERTConfig.ModelType "roberta" (zoo pretrain bert
// --model-type roberta) trains a byte-level BPE with RoBERTa's special
// tokens on the corpus, packs each document's sentences into <s> … </s>
// sequences and trains a RobertaForMaskedLM by masked LM alone, with new
// masks every epoch; "distilbert" does the same on a WordPiece.
func ExampleRunBERT_roberta() {
	dir, err := os.MkdirTemp("", "roberta")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var corpus strings.Builder
	for d, c := range []string{"red", "blue", "green", "gold", "black", "white"} {
		if d > 0 {
			corpus.WriteString("\n")
		}
		for _, a := range []string{"fox", "cat", "owl", "dog"} {
			fmt.Fprintf(&corpus, "the %s %s runs to the %s den.\n", c, a, c)
		}
	}
	cfg := pretrain.DefaultBERT()
	cfg.ModelType = bert.RobertaModelType
	cfg.Corpus, cfg.OutputDir = filepath.Join(dir, "corpus.txt"), filepath.Join(dir, "run")
	if err := os.WriteFile(cfg.Corpus, []byte(corpus.String()), 0o644); err != nil {
		log.Fatal(err)
	}
	cfg.VocabSize, cfg.MaxSeqLength, cfg.MaxPredictions, cfg.ValFraction, cfg.DynamicMasking = 300, 16, 3, 0.3, true
	cfg.Model = bert.Tiny()
	cfg.Model.NumHiddenLayers, cfg.Model.HiddenSize, cfg.Model.IntermediateSize = 1, 16, 32
	cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps = 4, 2, 0, 2, 0
	fmt.Println("masked LM only:", pretrain.MLMOnly(cfg.ModelType))
	res, err := pretrain.RunBERT(context.Background(), cfg, io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	m, _, err := bert.LoadForMaskedLM(res.Final)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Steps, "steps;", m.Config.ModelType, "with", m.Config.MaxPositionEmbeddings, "positions; NSP figures:", !res.MLMOnly)
	// Output:
	// masked LM only: true
	// 2 steps; roberta with 18 positions; NSP figures: false
}

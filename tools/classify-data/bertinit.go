package main

import (
	"context"
	"fmt"
	"io"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// bertPresets are the shapes bert-init builds, by name.
var bertPresets = map[string]func() bert.Config{
	"tiny": bert.Tiny, "mini": bert.Mini, "small": bert.Small, "medium": bert.Medium, "base": bert.Base,
}

// runBERTInit is `classify-data bert-init -train FILE -out DIR`.
func runBERTInit(args []string, stdout io.Writer) error {
	f := newFlags("bert-init")
	trainFile := f.String("train", "", "training TSV, CSV or JSONL whose text column the WordPiece is trained on")
	out := f.String("out", "", "checkpoint directory to write (config.json, model.safetensors, tokenizer.json)")
	vocab := f.Int("vocab", 8000, "WordPiece vocabulary size, the 5 specials included")
	preset := f.String("preset", "mini", "BERT shape: tiny, mini, small, medium or base")
	positions := f.Int("positions", 0, "max_position_embeddings (0: the preset's 512)")
	seed := f.Uint64("seed", 1, "seed of the initial weights")
	if err := parse(f, args); err != nil {
		return err
	}
	if *trainFile == "" || *out == "" {
		return fmt.Errorf("%w: give -train and -out\n%s", errUsage, usage)
	}
	mk, ok := bertPresets[*preset]
	if !ok {
		return fmt.Errorf("%w: unknown -preset %q: tiny, mini, small, medium or base", errUsage, *preset)
	}
	ex, err := datasets.ReadLabelled(*trainFile, datasets.LabelledOptions{})
	if err != nil {
		return err
	}
	texts := make([]string, len(ex))
	for i, e := range ex {
		texts[i] = e.Text
	}
	tok, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: *vocab, Lowercase: true, StripAccents: true})
	if err != nil {
		return err
	}
	cfg := mk()
	cfg.VocabSize = tok.VocabSize()
	if *positions > 0 {
		cfg.MaxPositionEmbeddings = *positions
	}
	m, err := bert.New(cfg, layers.WithSeed(*seed))
	if err != nil {
		return err
	}
	if err := models.SaveText(*out, m, tok); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: BERT-%s shape (%d layers, %d wide), %d parameters, untrained; WordPiece of %d tokens (lowercase) trained on the %d texts of %s\n",
		*out, *preset, cfg.NumHiddenLayers, cfg.HiddenSize, m.NumParams(), tok.VocabSize(), len(texts), *trainFile)
	return nil
}

package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/models/gpt"
)

// writeTiny writes untrained stand-ins into dir, for a smoke run where no
// real checkpoints are at hand, and points o at those it was not given: a
// BERT-Mini-shaped classifier and a BertModel (mean pooling) of the same
// shape over a WordPiece vocabulary trained on texts, and a GPT of
// gpt.Micro's shape with a 512-token context over a character
// vocabulary. Their timings are shapes' timings, not a trained model's
// answers.
func writeTiny(dir string, o *options) error {
	wp, err := datasets.TrainWordPieceTexts(context.Background(), texts,
		datasets.WordPieceOptions{VocabSize: 400, MinFrequency: 1, Lowercase: true})
	if err != nil {
		return err
	}
	cfg := bert.Mini()
	cfg.VocabSize = wp.VocabSize()
	if o.bert == "" {
		m, err := bert.New(cfg, layers.WithSeed(1))
		if err != nil {
			return err
		}
		cls, err := bert.NewForSequenceClassification(m, []string{"negative", "positive"})
		if err != nil {
			return err
		}
		o.bert = filepath.Join(dir, "bert-mini-cls")
		if err := models.SaveText(o.bert, cls, wp); err != nil {
			return err
		}
	}
	if o.embed == "" {
		m, err := bert.New(cfg, layers.WithSeed(2))
		if err != nil {
			return err
		}
		o.embed = filepath.Join(dir, "bert-mini-embed")
		if err := models.SaveText(o.embed, m, wp); err != nil {
			return err
		}
	}
	if o.gpt == "" {
		p := filepath.Join(dir, "corpus.txt")
		if err := os.WriteFile(p, []byte(joined()), 0o644); err != nil {
			return err
		}
		c, err := datasets.OpenCorpus(p, datasets.CorpusOptions{})
		if err != nil {
			return err
		}
		tok, err := datasets.NewCharTokenizer(c)
		if err != nil {
			return err
		}
		gc := gpt.Micro()
		gc.VocabSize, gc.NPositions, gc.BOSTokenID, gc.EOSTokenID = tok.VocabSize(), 512, 0, 0
		m, err := gpt.New(gc, layers.WithSeed(3))
		if err != nil {
			return err
		}
		o.gpt = filepath.Join(dir, "gpt-micro")
		if err := models.SaveText(o.gpt, m, tok); err != nil {
			return err
		}
	}
	return nil
}

func joined() string {
	s := ""
	for _, t := range texts {
		s += t + "\n"
	}
	return s
}

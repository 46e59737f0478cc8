package main

import (
	"context"
	"fmt"
	"io"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/finetune"
	"github.com/d73a19ff/zoo/models"
)

// evalClassify is finetune.EvalClassify with its notes (truncated and
// skipped examples, text mapped to the unknown token) written to w.
func evalClassify(ctx context.Context, w io.Writer, checkpoint, labelled string, batch int) (finetune.Confusion, error) {
	return finetune.EvalClassifyWith(ctx, checkpoint, labelled, batch, datasets.LabelledOptions{}, w)
}

// noteUnknowns writes the note on what tok has mapped to its unknown token
// since its count was before, if anything, naming what was encoded.
func noteUnknowns(w io.Writer, tok datasets.Tokenizer, before int, what string) {
	fmt.Fprint(w, datasets.UnknownNoteFor(tok, datasets.Unknowns(tok)-before, what))
}

// noteCorpusUnknowns encodes the corpus with the checkpoint's tokenizer,
// as an evaluation on it does, and notes the characters or words that
// become the unknown token: zoo eval --corpus scores them as that token.
func noteCorpusUnknowns(w io.Writer, checkpoint, corpus string) error {
	tok, err := models.LoadTokenizer(checkpoint)
	if err != nil {
		return err
	}
	if _, ok := tok.(datasets.UnknownCounter); !ok {
		return nil
	}
	c, err := datasets.OpenCorpus(corpus, datasets.CorpusOptions{})
	if err != nil {
		return err
	}
	before := datasets.Unknowns(tok)
	if err := c.Each(func(text string) error {
		_, err := tok.Encode(text)
		return err
	}); err != nil {
		return err
	}
	noteUnknowns(w, tok, before, corpus)
	return nil
}

package finetune

import (
	"context"
	"fmt"
	"io"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
)

// EvalClassify scores a classifier checkpoint of any family on a labelled
// file of single texts in columns "text" and "label": accuracy, macro-F1
// and the confusion matrix. A cancelled ctx stops it between batches.
func EvalClassify(ctx context.Context, checkpoint, file string, batch int) (Confusion, error) {
	return EvalClassifyWith(ctx, checkpoint, file, batch, datasets.LabelledOptions{}, io.Discard)
}

// EvalClassifyWith is EvalClassify with the file's columns named by opts
// (a TextPairColumn for sentence pairs). Texts are encoded as RunClassify
// encodes them (special tokens, token types, truncation to the model's
// max length); notes on truncated and skipped examples, and on text mapped
// to the unknown token, go to out.
func EvalClassifyWith(ctx context.Context, checkpoint, file string, batch int, opts datasets.LabelledOptions, out io.Writer) (Confusion, error) {
	if batch <= 0 {
		return Confusion{}, fmt.Errorf("eval: batch %d must be positive", batch)
	}
	ckpt, err := models.Open(checkpoint)
	if err != nil {
		return Confusion{}, fmt.Errorf("eval: %w", err)
	}
	if ckpt.Family.LoadClassifier == nil {
		return Confusion{}, fmt.Errorf("eval: the %s family has no sequence classifier", ckpt.Family.Name)
	}
	tok, err := ckpt.Tokenizer()
	if err != nil {
		return Confusion{}, fmt.Errorf("eval: %w", err)
	}
	if err := models.CheckVocab(checkpoint, tok); err != nil {
		return Confusion{}, fmt.Errorf("eval: %w", err)
	}
	c, err := ckpt.Family.LoadClassifier(checkpoint)
	if err != nil {
		return Confusion{}, fmt.Errorf("eval: %w", err)
	}
	if err := checkStep(c, batch, c.MaxLength(), false, "eval", "lower the batch size (zoo eval --batch-size)"); err != nil {
		return Confusion{}, err
	}
	ex, err := datasets.ReadLabelled(file, opts)
	if err != nil {
		return Confusion{}, err
	}
	_, typeVocab, err := models.TextSizes(checkpoint)
	if err != nil {
		return Confusion{}, fmt.Errorf("eval: %w", err)
	}
	t := c.MaxLength()
	pairs := opts.TextPairColumn != ""
	e, err := newEncoder(tok, t, typeVocab, pairs)
	if err != nil {
		return Confusion{}, fmt.Errorf("eval: %w", err)
	}
	enc, err := e.encode(ex, c.ClassNames(), pairs)
	if err != nil {
		return Confusion{}, fmt.Errorf("eval: %s: %w", file, err)
	}
	fmt.Fprint(out, datasets.UnknownNoteFor(tok, e.unknown, "the texts"))
	e.notes(out, file, len(ex))
	d := newClsData(nil, enc, batch, t, c.PadID(), 0)
	return evaluate(ctx, &clsTask{c: c, tok: tok, b: batch, t: t, types: typeVocab > 0}, d.val, c.ClassNames())
}

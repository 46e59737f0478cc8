package finetune

import (
	"context"
	"fmt"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
)

// EvalClassify scores a classifier checkpoint of any family on a labelled
// file: accuracy, macro-F1 and the confusion matrix.
func EvalClassify(checkpoint, file string, batch int) (Confusion, error) {
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
	c, err := ckpt.Family.LoadClassifier(checkpoint)
	if err != nil {
		return Confusion{}, fmt.Errorf("eval: %w", err)
	}
	if err := checkStep(c, batch, c.MaxLength(), false, "eval", "lower the batch size (zoo eval --batch-size)"); err != nil {
		return Confusion{}, err
	}
	tok, err := ckpt.Tokenizer()
	if err != nil {
		return Confusion{}, fmt.Errorf("eval: %w", err)
	}
	ex, err := datasets.ReadLabelled(file, datasets.LabelledOptions{})
	if err != nil {
		return Confusion{}, err
	}
	t := c.MaxLength()
	enc, err := encode(ex, c.ClassNames(), tok, t)
	if err != nil {
		return Confusion{}, fmt.Errorf("eval: %s: %w", file, err)
	}
	d := newClsData(nil, enc, batch, t, c.PadID(), 0)
	return evaluate(context.Background(), &clsTask{c: c, tok: tok, b: batch, t: t}, d.val, c.ClassNames())
}

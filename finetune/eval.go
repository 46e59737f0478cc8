package finetune

import (
	"fmt"
	"path/filepath"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/pretrain"
)

// EvalClassify scores a classifier checkpoint on a labelled file: accuracy,
// macro-F1 and the confusion matrix.
func EvalClassify(checkpoint, file string, batch int) (Confusion, error) {
	if batch <= 0 {
		return Confusion{}, fmt.Errorf("eval: batch %d must be positive", batch)
	}
	c, err := gpt.LoadClassifier(checkpoint)
	if err != nil {
		return Confusion{}, fmt.Errorf("eval: %w", err)
	}
	tok, err := datasets.LoadTokenizer(filepath.Join(checkpoint, pretrain.TokenizerFile))
	if err != nil {
		return Confusion{}, fmt.Errorf("eval: %w", err)
	}
	ex, err := datasets.ReadLabelled(file, datasets.LabelledOptions{})
	if err != nil {
		return Confusion{}, err
	}
	t := c.Config.NPositions
	enc, err := encode(ex, c.Labels, tok, t)
	if err != nil {
		return Confusion{}, fmt.Errorf("eval: %s: %w", file, err)
	}
	d := newClsData(nil, enc, batch, t, 0)
	return evaluate(&clsTask{c: c, tok: tok, b: batch, t: t}, d.val, c.Labels)
}

package pretrain

import (
	"context"
	"fmt"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/train"
)

// EvalGPT is the mean next-token cross-entropy of a GPT checkpoint on a
// corpus, over every non-overlapping window of the checkpoint's context
// (the validation loss RunGPT reports), batch windows at a time. A
// cancelled ctx stops the tokenizing and the evaluation with an error
// wrapping ctx.Err().
func EvalGPT(ctx context.Context, checkpoint, corpus string, batch int) (loss float64, tokens int, err error) {
	if batch <= 0 {
		return 0, 0, fmt.Errorf("eval: batch %d must be positive", batch)
	}
	tok, err := models.LoadTokenizer(checkpoint)
	if err != nil {
		return 0, 0, fmt.Errorf("eval: %w", err)
	}
	m, _, err := gpt.Load(checkpoint)
	if err != nil {
		return 0, 0, fmt.Errorf("eval: %w", err)
	}
	t := m.Config.NPositions
	if err := models.CheckMemory(m.Config.ActivationBytes(batch, t, true, false),
		fmt.Sprintf("eval: batch %d × n_positions %d for activations", batch, t), "lower the batch size (zoo eval --batch-size)"); err != nil {
		return 0, 0, err
	}
	batches, err := evalWindows(ctx, corpus, tok, batch, t)
	if err != nil {
		return 0, 0, err
	}
	return train.EvaluateContext(ctx, &LMTask{Model: m, Tok: tok, B: batch, T: t}, batches)
}

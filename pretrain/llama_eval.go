package pretrain

import (
	"context"
	"fmt"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
	"github.com/d73a19ff/zoo/train"
)

// EvalLlama is the mean next-token cross-entropy of a LLaMA-family
// checkpoint on a corpus, over every non-overlapping window of block
// tokens (0: the model's max_position_embeddings), batch windows at a
// time: the validation loss RunLlama reports. A cancelled ctx stops the
// tokenizing and the evaluation with an error wrapping ctx.Err().
func EvalLlama(ctx context.Context, checkpoint, corpus string, batch, block int) (loss float64, tokens int, err error) {
	if batch <= 0 || block < 0 {
		return 0, 0, fmt.Errorf("eval: batch %d must be positive and block %d not negative", batch, block)
	}
	tok, err := models.LoadTokenizer(checkpoint)
	if err != nil {
		return 0, 0, fmt.Errorf("eval: %w", err)
	}
	m, _, err := llama.LoadForCausalLM(checkpoint, models.Strict())
	if err != nil {
		return 0, 0, fmt.Errorf("eval: %w", err)
	}
	if n := tok.VocabSize(); n > m.Config.VocabSize {
		return 0, 0, fmt.Errorf("eval: %s: its tokenizer has %d tokens but its model's vocab_size is %d", checkpoint, n, m.Config.VocabSize)
	}
	if block == 0 {
		block = m.Config.MaxPositionEmbeddings
	}
	if err := m.Config.CheckLength(block); err != nil {
		return 0, 0, fmt.Errorf("eval: block %d: %w", block, err)
	}
	if err := models.CheckMemory(m.Config.ActivationBytes(batch, block, true, false),
		fmt.Sprintf("eval: batch %d × block %d for activations", batch, block), "lower the batch size (zoo eval --batch-size) or the block (--block-size)"); err != nil {
		return 0, 0, err
	}
	batches, err := evalWindows(ctx, corpus, tok, batch, block)
	if err != nil {
		return 0, 0, err
	}
	return train.EvaluateContext(ctx, &LlamaTask{Model: m, Tok: tok, B: batch, T: block}, batches)
}

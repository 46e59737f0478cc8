package bert

import "github.com/d73a19ff/zoo/models"

// ActivationBytes estimates the float32 buffers of one step of the
// backbone on B texts of T tokens, in bytes (math.MaxInt64 if it
// overflows), counted as GPT's Config.ActivationBytes counts a block: per
// layer about 16 (B·T·d) tensors, 4 (B·h·T·T) attention tensors and 2
// (B·T·I) feed-forward tensors, doubled in training for the gradients;
// plus the embeddings' 6 (B·T·d) (three lookups, two sums, LayerNorm).
func (c Config) ActivationBytes(batch, t int, training bool) int64 {
	b, tt, d, h, in := int64(batch), int64(t), int64(c.HiddenSize), int64(c.NumAttentionHeads), int64(c.IntermediateSize)
	perLayer := models.Sum(models.Mul(16, b, tt, d), models.Mul(4, b, h, tt, tt), models.Mul(2, b, tt, in))
	n := models.Sum(models.Mul(int64(c.NumHiddenLayers), perLayer), models.Mul(6, b, tt, d))
	if training {
		n = models.Mul(2, n)
	}
	return models.Mul(4, n)
}

// StepBytes implements models.StepEstimator: the backbone's activations
// on B texts of T tokens and the head's 3 (B, num_labels) scores, softmax
// and gradient, in bytes.
func (c *ForSequenceClassification) StepBytes(batch, t int, training bool) int64 {
	head := models.Mul(4*3, int64(batch), int64(len(c.Labels)))
	return models.Sum(c.Config.ActivationBytes(batch, t, training), head)
}

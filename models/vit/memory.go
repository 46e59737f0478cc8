package vit

import (
	"fmt"

	"github.com/d73a19ff/zoo/models"
)

// ActivationBytes estimates the float32 buffers of one step of the
// backbone on B images, in bytes (math.MaxInt64 if it overflows), counted
// as BERT's and GPT's Config.ActivationBytes count a block, over the
// T = N+1 tokens: per layer about 16 (B·T·D) tensors, 4 (B·h·T·T)
// attention tensors and 2 (B·T·I) feed-forward tensors, doubled in
// training for the gradients; plus the embeddings: the images and their
// patches 2 (B·C·S²), the projection, class token and positions 4 (B·T·D).
func (c Config) ActivationBytes(batch int, training bool) int64 {
	return c.activationBytesAt(batch, c.ImageSize, c.ImageSize, training)
}

// activationBytesAt is ActivationBytes for images of ih × iw pixels (with
// interpolated positions), T = (ih/P)·(iw/P) + 1 (DeiT: + 2).
func (c Config) activationBytesAt(batch, ih, iw int, training bool) int64 {
	var tt int64 = 1
	if c.PatchSize > 0 {
		tt = models.Sum(models.Mul(int64(ih/c.PatchSize), int64(iw/c.PatchSize)), int64(c.prefixTokens()))
	}
	b, d, h, in := int64(batch), int64(c.HiddenSize), int64(c.NumAttentionHeads), int64(c.IntermediateSize)
	px := models.Mul(int64(c.NumChannels), int64(ih), int64(iw))
	perLayer := models.Sum(models.Mul(16, b, tt, d), models.Mul(4, b, h, tt, tt), models.Mul(2, b, tt, in))
	n := models.Sum(models.Mul(int64(c.NumHiddenLayers), perLayer), models.Mul(4, b, tt, d), models.Mul(2, b, px))
	if training {
		n = models.Mul(2, n)
	}
	return models.Mul(4, n)
}

// StepBytes estimates the buffers of one training step (training true) or
// forward pass on B images, in bytes: the backbone's activations and the
// head's 3 (B, num_labels) scores, softmax and gradient. The second
// argument, a text length in models.StepEstimator, is ignored: an image's
// tokens are fixed by image_size and patch_size.
func (c *ForImageClassification) StepBytes(batch, _ int, training bool) int64 {
	head := models.Mul(4*3, int64(batch), int64(len(c.Labels)))
	return models.Sum(c.Config.ActivationBytes(batch, training), head)
}

// CheckStep reports a batch size whose step would not fit the machine's
// memory, before any graph is built, naming what to lower.
func (c *ForImageClassification) CheckStep(batch int, training bool) error {
	if batch <= 0 {
		return fmt.Errorf("vit: batch size %d must be positive", batch)
	}
	return models.CheckMemory(c.StepBytes(batch, 0, training),
		fmt.Sprintf("vit: a step of %d images of %d×%d (%d tokens)", batch, c.Config.ImageSize, c.Config.ImageSize, c.Config.NumPatches()+c.Config.prefixTokens()),
		"lower the batch size")
}

// CheckStepAt is CheckStep for images of h × w pixels (read with
// interpolated positions, see WithInterpolation): their patches set the
// tokens, and so the memory.
func (c *ForImageClassification) CheckStepAt(batch, h, w int, training bool) error {
	if batch <= 0 {
		return fmt.Errorf("vit: batch size %d must be positive", batch)
	}
	head := models.Mul(4*3, int64(batch), int64(len(c.Labels)))
	t := (h/max(c.Config.PatchSize, 1))*(w/max(c.Config.PatchSize, 1)) + c.Config.prefixTokens()
	return models.CheckMemory(models.Sum(c.Config.activationBytesAt(batch, h, w, training), head),
		fmt.Sprintf("vit: a step of %d images of %d×%d (%d tokens)", batch, h, w, t),
		"lower the batch size or the image size")
}

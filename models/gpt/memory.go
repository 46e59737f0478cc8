package gpt

import "github.com/d73a19ff/zoo/models"

// StepBytes implements models.StepEstimator: the backbone's activations
// on B texts of T tokens (Config.ActivationBytes without the LM head) and
// the head's 3 (B, num_labels) scores, softmax and gradient, in bytes.
func (c *Classifier) StepBytes(batch, t int, training bool) int64 {
	head := models.Mul(4*3, int64(batch), int64(len(c.Labels)))
	return models.Sum(c.Config.ActivationBytes(batch, t, false, training), head)
}

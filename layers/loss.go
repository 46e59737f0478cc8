package layers

import (
	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
)

// IgnoreIndex is the target value the loss skips by default, as in PyTorch.
const IgnoreIndex = -100

// CrossEntropy is the mean softmax cross-entropy of logits (..., V) against
// int targets (...): targets equal to ignoreIndex are skipped, and with label
// smoothing ε each position's loss is (1−ε)·NLL + ε·mean_j(−log p_j), as
// torch.nn.functional.cross_entropy. It returns a scalar and never builds a
// one-hot (N, V) tensor.
func CrossEntropy(logits, targets *gorgonia.Node, ignoreIndex int, labelSmoothing float64) (*gorgonia.Node, error) {
	return ops.CrossEntropy(logits, targets, ignoreIndex, labelSmoothing)
}

// DistillCrossEntropy is CrossEntropy with a share alpha of each
// position's target taken from teacher (the logits' shape), a teacher's
// distribution over the classes: token-level knowledge distillation, as
// (1−α)·F.cross_entropy(logits, targets, label_smoothing=ε) +
// α·F.cross_entropy(logits, teacher) over the positions not ignored.
func DistillCrossEntropy(logits, targets, teacher *gorgonia.Node, ignoreIndex int, labelSmoothing, alpha float64) (*gorgonia.Node, error) {
	return ops.DistillCrossEntropy(logits, targets, teacher, ignoreIndex, labelSmoothing, alpha)
}

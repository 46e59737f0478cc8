package bert

import (
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// NewTokenClassifierFromConfig builds a token classifier for labels with
// the architecture of dir's config.json and fresh weights (New's
// initialisation): the checkpoint's weights are not read. It is the
// from-scratch side of a pretrained-versus-scratch comparison, the same
// model with the same budget.
func NewTokenClassifierFromConfig(dir string, labels []string, opts ...layers.Option) (*ForTokenClassification, error) {
	cfg, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	cfg.ID2Label = nil
	m, err := New(cfg, opts...)
	if err != nil {
		return nil, err
	}
	return NewForTokenClassification(m, labels)
}

// LoadTokenClassifier reads a token classifier checkpoint (Save's, or
// transformers' BertForTokenClassification, which has no pooler) with the
// tags of its config.json's id2label, strictly. The report lists the
// bert.pooler.* tensors of a checkpoint that has them (zoo wrote them
// before it followed transformers), which were dropped; nothing is ever
// created.
//
// Deprecated: use LoadForTokenClassification(dir, models.Strict()).
func LoadTokenClassifier(dir string, opts ...layers.Option) (*ForTokenClassification, LoadReport, error) {
	return LoadForTokenClassification(dir, storeOptions(opts, models.Strict())...)
}

// StepBytes estimates one step on B sentences of T word pieces, in bytes:
// the backbone's activations and the head's 3 (B, T, num_labels) scores,
// softmax and gradient.
func (c *ForTokenClassification) StepBytes(batch, t int, training bool) int64 {
	head := models.Mul(4*3, int64(batch), int64(t), int64(len(c.Labels)))
	return models.Sum(c.Config.ActivationBytes(batch, t, training), head)
}

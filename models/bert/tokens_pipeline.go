package bert

import (
	"fmt"
	"path/filepath"
	"strconv"

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
// transformers' BertForTokenClassification) with the tags of its
// config.json's id2label, strictly.
func LoadTokenClassifier(dir string, opts ...layers.Option) (*ForTokenClassification, error) {
	cfg, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	if err := checkClassifierKind(dir, archTokenClassifier); err != nil {
		return nil, err
	}
	if len(cfg.ID2Label) == 0 {
		return nil, fmt.Errorf("bert: %s has no id2label: it is not a token classifier; fine-tune one with zoo finetune bert --task tokens", filepath.Join(dir, models.ConfigFile))
	}
	labels := make([]string, len(cfg.ID2Label))
	seen := make([]bool, len(labels))
	for k, l := range cfg.ID2Label {
		n, err := strconv.Atoi(k)
		if err != nil || n < 0 || n >= len(labels) || seen[n] {
			return nil, fmt.Errorf("bert: %s: id2label ids must be 0…%d, each once; found %q", filepath.Join(dir, models.ConfigFile), len(labels)-1, k)
		}
		labels[n], seen[n] = l, true
	}
	m, err := New(cfg, opts...)
	if err != nil {
		return nil, err
	}
	c, err := NewForTokenClassification(m, labels)
	if err != nil {
		return nil, err
	}
	if err := m.LoadWeights(filepath.Join(dir, models.WeightsFile)); err != nil {
		return nil, err
	}
	return c, nil
}

// StepBytes estimates one step on B sentences of T word pieces, in bytes:
// the backbone's activations and the head's 3 (B, T, num_labels) scores,
// softmax and gradient.
func (c *ForTokenClassification) StepBytes(batch, t int, training bool) int64 {
	head := models.Mul(4*3, int64(batch), int64(t), int64(len(c.Labels)))
	return models.Sum(c.Config.ActivationBytes(batch, t, training), head)
}

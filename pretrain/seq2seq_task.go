package pretrain

// This file is the seq2seq training objective that denoising pretraining
// (seq2seq.go) and translation fine-tuning (finetune/translate.go) share:
// label-smoothed cross-entropy over the model's batches (seq2seq.Batch),
// with token-level distillation's soft targets when the data carries them.

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/train"
)

// Seq2SeqTask is the seq2seq training objective for the engine: label-smoothed
// cross-entropy, one graph per bucket shape (B, Ts, Tt).
type Seq2SeqTask struct {
	Model     *seq2seq.Model
	Tok       datasets.Tokenizer
	Smoothing float64
	// Distill is the teacher's share of the target (distill_alpha; 0:
	// none): the loss is layers.DistillCrossEntropy against the batches'
	// Teacher distributions. A batch without one (validation) scores the
	// plain label-smoothed loss.
	Distill float64
}

// Store implements train.Task.
func (k *Seq2SeqTask) Store() *layers.Store { return k.Model.Store }

// Loss implements train.Task; batches come in several shapes, so the
// engine calls LossFor.
func (k *Seq2SeqTask) Loss(*layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	return nil, nil, fmt.Errorf("seq2seq: the seq2seq task builds one graph per batch shape (LossFor)")
}

// LossFor implements train.ShapedTask for shape (B, Ts, Tt).
func (k *Seq2SeqTask) LossFor(g *layers.Graph, shape []int) (*gorgonia.Node, func(train.Batch) error, error) {
	if len(shape) != 3 {
		return nil, nil, fmt.Errorf("seq2seq: batch shape %v, want (B, Ts, Tt)", shape)
	}
	f := k.Model.NewFeed(g, shape[0], shape[1], shape[2])
	var teacher *gorgonia.Node
	var loss *gorgonia.Node
	var err error
	if k.Distill > 0 {
		teacher = g.Input("teacher_probs", shape[0], shape[2], k.Model.Config.TgtVocabSize)
		loss, err = k.distillLoss(g, f, teacher)
	} else {
		loss, _, err = k.Model.Loss(g, f.Inputs, f.Labels, k.Smoothing)
	}
	load := func(b train.Batch) error {
		sb, ok := b.(seq2seq.Batch)
		if !ok {
			return fmt.Errorf("seq2seq: a batch of %T is not a seq2seq batch", b)
		}
		if teacher != nil {
			if err := loadSeq2SeqTeacher(teacher.Value().(*tensor.Dense), sb, k.Smoothing); err != nil {
				return err
			}
		}
		return f.Load(sb)
	}
	return loss, load, err
}

func (k *Seq2SeqTask) distillLoss(g *layers.Graph, f seq2seq.Feed, teacher *gorgonia.Node) (*gorgonia.Node, error) {
	logits, err := k.Model.Forward(g, f.Inputs)
	if err != nil {
		return nil, err
	}
	loss, err := layers.DistillCrossEntropy(logits, f.Labels, teacher, layers.IgnoreIndex, k.Smoothing, k.Distill)
	if err != nil {
		return nil, fmt.Errorf("seq2seq: loss: %w", err)
	}
	return loss, nil
}

// loadTeacher copies b's teacher distributions into t (B, Tt, V); for a
// batch without them it writes the label-smoothed one-hot targets,
// (1−ε)·onehot + ε/V, with which the distillation loss is the plain
// label-smoothed cross-entropy.
func loadSeq2SeqTeacher(t *tensor.Dense, b seq2seq.Batch, eps float64) error {
	v := t.Shape()[2]
	if b.Teacher != nil && len(b.Teacher) != t.Size() {
		return fmt.Errorf("seq2seq: a batch's teacher distributions hold %d values, the graph's %d", len(b.Teacher), t.Size())
	}
	q := b.Teacher
	if q == nil {
		q = make([]float32, t.Size())
		for r, y := range b.Labels {
			if y == layers.IgnoreIndex {
				continue
			}
			row := q[r*v : (r+1)*v]
			for j := range row {
				row[j] = float32(eps / float64(v))
			}
			row[y] += float32(1 - eps)
		}
	}
	switch d := t.Data().(type) {
	case []float32:
		copy(d, q)
	case []float64:
		for i, x := range q {
			d[i] = float64(x)
		}
	default:
		return fmt.Errorf("seq2seq: teacher input of %T", d)
	}
	return nil
}

// Decay implements train.Decayer: the model's own no-decay parameters
// (seq2seq.Model.Decay).
func (k *Seq2SeqTask) Decay(name string, shape []int) bool { return k.Model.Decay(name, shape) }

// Save writes the model and the tokenizer into dir.
func (k *Seq2SeqTask) Save(dir string) error {
	return models.SaveText(dir, k.Model, k.Tok)
}

// Load reads a checkpoint's weights into the model.
func (k *Seq2SeqTask) Load(dir string) error {
	return models.LoadInto(dir, k.Model)
}

package seq2seq

// This file and data.go, train.go and translate.go are what the seq2seq
// pretraining and fine-tuning pipelines share: the joint tokenizer with its
// special tokens, encoding pairs with counted truncations, the engine's
// task, length-bucketed batches, and batched translation.

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/train"
)

// Specials are the special tokens at the start of every seq2seq
// vocabulary, in id order, matching Config's pad_token_id 0,
// bos_token_id 1 and eos_token_id 2; <mask> (3) is denoising's mask.
var Specials = []string{"<pad>", "<s>", "</s>", "<mask>"}

// MaskID is the id of <mask>.
const MaskID = 3

// TrainTokenizer trains a joint byte-level BPE of vocab tokens on texts.
func TrainTokenizer(texts []string, vocab int) (datasets.Tokenizer, error) {
	tok, err := datasets.TrainBPETexts(texts, vocab, Specials)
	if err != nil {
		return nil, err
	}
	return tok, nil
}

// Example is a pair as token ids, without bos and eos.
type Example struct{ Src, Tgt []int }

// Overlong says what to do with a side longer than max_len allows.
type Overlong string

// The policies for over-long sides.
const (
	Truncate Overlong = "truncate" // keep the first tokens, counted
	Skip     Overlong = "skip"     // drop the pair, counted
)

// EncodeReport counts what encoding pairs changed or dropped.
type EncodeReport struct {
	Pairs, Truncated, Skipped, Empty int
}

func (r EncodeReport) String() string {
	return fmt.Sprintf("%d pairs encoded; %d over-long truncated, %d over-long skipped, %d empty after tokenization skipped", r.Pairs, r.Truncated, r.Skipped, r.Empty)
}

// Encode tokenizes pairs for a model whose sources hold at most maxLen−1
// tokens (eos takes one) and whose targets too (bos or eos takes one).
func Encode(tok datasets.Tokenizer, pairs []datasets.Pair, maxLen int, policy Overlong) ([]Example, EncodeReport, error) {
	if policy != Truncate && policy != Skip {
		return nil, EncodeReport{}, fmt.Errorf("seq2seq: over-long policy %q must be %q or %q", policy, Truncate, Skip)
	}
	limit := maxLen - 1
	var out []Example
	var rep EncodeReport
	for i, p := range pairs {
		src, err := tok.Encode(p.Src)
		if err != nil {
			return nil, rep, fmt.Errorf("seq2seq: pair %d source: %w", i, err)
		}
		tgt, err := tok.Encode(p.Tgt)
		if err != nil {
			return nil, rep, fmt.Errorf("seq2seq: pair %d target: %w", i, err)
		}
		if len(src) == 0 || len(tgt) == 0 {
			rep.Empty++
			continue
		}
		if len(src) > limit || len(tgt) > limit {
			if policy == Skip {
				rep.Skipped++
				continue
			}
			rep.Truncated++
			src, tgt = src[:min(len(src), limit)], tgt[:min(len(tgt), limit)]
		}
		out = append(out, Example{Src: src, Tgt: tgt})
	}
	rep.Pairs = len(out)
	return out, rep, nil
}

// Task is the seq2seq training objective for the engine: label-smoothed
// cross-entropy, one graph per bucket shape (B, Ts, Tt).
type Task struct {
	Model     *Model
	Tok       datasets.Tokenizer
	Smoothing float64
	// Distill is the teacher's share of the target (distill_alpha; 0:
	// none): the loss is layers.DistillCrossEntropy against the batches'
	// Teacher distributions. A batch without one (validation) scores the
	// plain label-smoothed loss.
	Distill float64
}

// Store implements train.Task.
func (k *Task) Store() *layers.Store { return k.Model.Store }

// Loss implements train.Task; batches come in several shapes, so the
// engine calls LossFor.
func (k *Task) Loss(*layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	return nil, nil, fmt.Errorf("seq2seq: the seq2seq task builds one graph per batch shape (LossFor)")
}

// LossFor implements train.ShapedTask for shape (B, Ts, Tt).
func (k *Task) LossFor(g *layers.Graph, shape []int) (*gorgonia.Node, func(train.Batch) error, error) {
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
		sb, ok := b.(Batch)
		if !ok {
			return fmt.Errorf("seq2seq: a batch of %T is not a seq2seq batch", b)
		}
		if teacher != nil {
			if err := loadTeacher(teacher.Value().(*tensor.Dense), sb, k.Smoothing); err != nil {
				return err
			}
		}
		return f.Load(sb)
	}
	return loss, load, err
}

func (k *Task) distillLoss(g *layers.Graph, f Feed, teacher *gorgonia.Node) (*gorgonia.Node, error) {
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
func loadTeacher(t *tensor.Dense, b Batch, eps float64) error {
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

// Save writes the model and the tokenizer into dir.
func (k *Task) Save(dir string) error {
	return models.SaveText(dir, k.Model, k.Tok)
}

// Load reads a checkpoint's weights into the model.
func (k *Task) Load(dir string) error {
	return models.LoadInto(dir, k.Model)
}

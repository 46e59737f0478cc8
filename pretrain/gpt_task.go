package pretrain

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/train"
)

// This file is GPT's causal-LM objective for the training engine
// (train.Task and train.Data): what pretraining, LM fine-tuning (a run with
// init_from) and evaluation share. It lives here, not in models/gpt, so
// that the model package holds the model only and imports no train.

// LMTask is the causal-LM objective on (B, T) windows, for the engine. Its
// checkpoints hold the model and the tokenizer.
type LMTask struct {
	Model *gpt.Model
	Tok   datasets.Tokenizer
	B, T  int
}

// Store implements train.Task.
func (k *LMTask) Store() *layers.Store { return k.Model.Store }

// Decay implements train.Decayer: the model's own no-decay parameters.
func (k *LMTask) Decay(name string, shape []int) bool { return k.Model.Decay(name, shape) }

// Loss implements train.Task.
func (k *LMTask) Loss(g *layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	ids, targets := g.IntInput("input_ids", k.B, k.T), g.IntInput("labels", k.B, k.T)
	loss, _, err := k.Model.Loss(g, gpt.Inputs{IDs: ids}, targets)
	load := func(b train.Batch) error {
		lb, ok := b.(lmBatch)
		if !ok || len(lb.ids) != k.B*k.T {
			return fmt.Errorf("gpt: a batch of %T does not fit the (%d, %d) graph", b, k.B, k.T)
		}
		copy(ids.Value().Data().([]int), lb.ids)
		copy(targets.Value().Data().([]int), lb.targets)
		return nil
	}
	return loss, load, err
}

// Save implements train.Task: the checkpoint bundle's model files and
// tokenizer.json.
func (k *LMTask) Save(dir string) error {
	return models.SaveText(dir, k.Model, k.Tok)
}

// Load implements train.Task.
func (k *LMTask) Load(dir string) error {
	return models.LoadInto(dir, k.Model)
}

// lmBatch is B rows of T token ids and their next-token targets.
type lmBatch struct {
	ids, targets []int
	n            int // targets that are not ignored
}

// Targets implements train.Batch.
func (b lmBatch) Targets() int { return b.n }

// LMData serves random training windows and a fixed validation set: every
// non-overlapping window of the validation split, so the validation loss is
// deterministic and comparable across implementations.
type LMData struct {
	train *datasets.Batcher
	val   []train.Batch
	b, t  int
}

// NewLMData serves random (b, t) windows of trainTok, seeded, and every
// window of val.
func NewLMData(trainTok, val *datasets.Tokens, b, t int, seed uint64) (*LMData, error) {
	bt, err := datasets.NewBatcher(trainTok, b, t, seed)
	if err != nil {
		return nil, fmt.Errorf("training split: %w", err)
	}
	vb, err := Windows(val, b, t)
	if err != nil {
		return nil, err
	}
	return &LMData{train: bt, val: vb, b: b, t: t}, nil
}

// Windows cuts toks into non-overlapping windows of t+1 tokens starting at
// 0, t, 2t, …, batched b at a time; a short last batch is padded with
// ignored targets.
func Windows(toks *datasets.Tokens, b, t int) ([]train.Batch, error) {
	var out []train.Batch
	cur := lmBatch{ids: make([]int, b*t), targets: make([]int, b*t)}
	row := 0
	flush := func() {
		for i := row * t; i < b*t; i++ {
			cur.ids[i], cur.targets[i] = 0, layers.IgnoreIndex
		}
		out = append(out, cur)
		cur = lmBatch{ids: make([]int, b*t), targets: make([]int, b*t)}
		row = 0
	}
	for s := 0; s+t+1 <= toks.Len(); s += t {
		w, err := toks.IDs(s, s+t+1)
		if err != nil {
			return nil, err
		}
		copy(cur.ids[row*t:], w[:t])
		copy(cur.targets[row*t:], w[1:])
		cur.n += t
		if row++; row == b {
			flush()
		}
	}
	if row > 0 {
		flush()
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the validation split has %d tokens, fewer than one block of %d", toks.Len(), t+1)
	}
	return out, nil
}

func (d *LMData) Next() (train.Batch, error) {
	x, y := d.train.Next()
	return lmBatch{ids: x, targets: y, n: len(y)}, nil
}

func (d *LMData) Eval() ([]train.Batch, error) { return d.val, nil }
func (d *LMData) State() ([]byte, error)       { return d.train.State() }
func (d *LMData) Restore(state []byte) error   { return d.train.Restore(state) }

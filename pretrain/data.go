package pretrain

import (
	"fmt"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/train"
)

// lmBatch is B rows of T token ids and their next-token targets.
type lmBatch struct {
	ids, targets []int
	n            int // targets that are not ignored
}

// Targets implements train.Batch.
func (b lmBatch) Targets() int { return b.n }

// lmData serves random training windows and a fixed validation set: every
// non-overlapping window of the validation split, so the validation loss is
// deterministic and comparable across implementations.
type lmData struct {
	train *datasets.Batcher
	val   []train.Batch
	b, t  int
}

func newLMData(trainTok, val *datasets.Tokens, b, t int, seed uint64) (*lmData, error) {
	bt, err := datasets.NewBatcher(trainTok, b, t, seed)
	if err != nil {
		return nil, fmt.Errorf("training split: %w", err)
	}
	vb, err := windows(val, b, t)
	if err != nil {
		return nil, err
	}
	return &lmData{train: bt, val: vb, b: b, t: t}, nil
}

// windows cuts toks into non-overlapping windows of t+1 tokens starting at
// 0, t, 2t, …, batched b at a time; a short last batch is padded with
// ignored targets.
func windows(toks *datasets.Tokens, b, t int) ([]train.Batch, error) {
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

func (d *lmData) Next() (train.Batch, error) {
	x, y := d.train.Next()
	return lmBatch{ids: x, targets: y, n: len(y)}, nil
}

func (d *lmData) Eval() ([]train.Batch, error) { return d.val, nil }
func (d *lmData) State() ([]byte, error)       { return d.train.State() }
func (d *lmData) Restore(state []byte) error   { return d.train.Restore(state) }

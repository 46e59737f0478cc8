package seq2seq

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// Batch is B pairs padded to fixed lengths, in the layout the model reads:
// Src (B·Ts) is each source followed by eos; TgtIn (B·Tt) is bos followed by
// the target; Labels (B·Tt) is the target followed by eos, with
// layers.IgnoreIndex wherever TgtIn is padding.
type Batch struct {
	Src, TgtIn, Labels []int
	B, Ts, Tt          int
	N                  int // labels that are not ignored
	// Teacher, when distilling, is the teacher's distribution at every
	// label position (B·Tt·V, zero where Labels are ignored); nil for
	// batches without one (validation), whose loss is then the plain one.
	Teacher []float32
}

// Targets is the number of labels the loss counts.
func (b Batch) Targets() int { return b.N }

// Shape is (B, Ts, Tt): the engine compiles one graph per shape
// (train.Shaped).
func (b Batch) Shape() []int { return []int{b.B, b.Ts, b.Tt} }

// SourceLen is the number of positions a source of n tokens takes: the
// tokens and eos.
func SourceLen(n int) int { return n + 1 }

// TargetLen is the number of decoder positions a target of n tokens takes:
// bos and the tokens (the labels are the tokens and eos).
func TargetLen(n int) int { return n + 1 }

// NewBatch pads pairs of token ids (without bos/eos) into a Batch of shape
// (rows, ts) and (rows, tt); rows ≥ len(srcs), and rows beyond the pairs are
// all padding with ignored labels (a short last batch keeps the graph's
// shape). A pair that does not fit, or an id outside the vocabularies, is
// an error naming the pair.
func (c Config) NewBatch(srcs, tgts [][]int, rows, ts, tt int) (Batch, error) {
	if len(srcs) != len(tgts) || len(srcs) > rows {
		return Batch{}, fmt.Errorf("seq2seq batch: %d sources and %d targets for %d rows", len(srcs), len(tgts), rows)
	}
	b := Batch{B: rows, Ts: ts, Tt: tt, Src: make([]int, rows*ts), TgtIn: make([]int, rows*tt), Labels: make([]int, rows*tt)}
	for i := range b.Src {
		b.Src[i] = c.PadTokenID
	}
	for i := range b.TgtIn {
		b.TgtIn[i], b.Labels[i] = c.PadTokenID, layers.IgnoreIndex
	}
	for r := range srcs {
		s, t := srcs[r], tgts[r]
		if SourceLen(len(s)) > ts || TargetLen(len(t)) > tt {
			return Batch{}, fmt.Errorf("seq2seq batch: pair %d (%d and %d tokens) does not fit lengths %d and %d with eos/bos", r, len(s), len(t), ts, tt)
		}
		if err := c.checkIDs(s, c.SrcVocabSize, "source", r); err != nil {
			return Batch{}, err
		}
		if err := c.checkIDs(t, c.TgtVocabSize, "target", r); err != nil {
			return Batch{}, err
		}
		copy(b.Src[r*ts:], s)
		b.Src[r*ts+len(s)] = c.EOSTokenID
		b.TgtIn[r*tt] = c.BOSTokenID
		copy(b.TgtIn[r*tt+1:], t)
		copy(b.Labels[r*tt:], t)
		b.Labels[r*tt+len(t)] = c.EOSTokenID
		b.N += len(t) + 1
	}
	return b, nil
}

func (c Config) checkIDs(ids []int, vocab int, side string, row int) error {
	for j, id := range ids {
		if id < 0 || id >= vocab {
			return fmt.Errorf("seq2seq: %s %d token %d is id %d, outside the vocabulary [0, %d)", side, row, j, id, vocab)
		}
		if id == c.PadTokenID || id == c.EOSTokenID || id == c.BOSTokenID {
			return fmt.Errorf("seq2seq: %s %d token %d is the special id %d (pad, bos or eos); those are added by the model", side, row, j, id)
		}
	}
	return nil
}

// Feed is a graph's inputs for batches of one shape, bound to tensors that
// Load refills before each run.
type Feed struct {
	Inputs
	Labels *gorgonia.Node // (B, Tt) int
	cfg    Config
}

// NewFeed adds inputs for batches (b, ts, tt) to g.
func (m *Model) NewFeed(g *layers.Graph, b, ts, tt int) Feed {
	return Feed{
		Inputs: Inputs{
			Src: g.IntInput("input_ids", b, ts), SrcMask: g.Input("attention_mask", b, ts),
			TgtIn: g.IntInput("decoder_input_ids", b, tt), TgtMask: g.Input("decoder_attention_mask", b, tt),
		},
		Labels: g.IntInput("labels", b, tt),
		cfg:    m.Config,
	}
}

// Load copies a batch into the inputs and sets the masks from its padding.
func (f Feed) Load(b Batch) error {
	if b.B != f.Src.Shape()[0] || b.Ts != f.Src.Shape()[1] || b.Tt != f.TgtIn.Shape()[1] {
		return fmt.Errorf("seq2seq: a batch of (%d, %d, %d) does not fit the graph's (%d, %d, %d)",
			b.B, b.Ts, b.Tt, f.Src.Shape()[0], f.Src.Shape()[1], f.TgtIn.Shape()[1])
	}
	copy(f.Src.Value().Data().([]int), b.Src)
	copy(f.TgtIn.Value().Data().([]int), b.TgtIn)
	copy(f.Labels.Value().Data().([]int), b.Labels)
	setMask(f.SrcMask.Value().(*tensor.Dense), b.Src, f.cfg.PadTokenID)
	tgt := f.TgtMask.Value().(*tensor.Dense)
	setMask(tgt, b.TgtIn, f.cfg.PadTokenID)
	// Every decoder input starts with decoder_start_token_id, which
	// Marian sets to the pad id: the first position is always a token.
	for r := 0; r < b.B; r++ {
		switch d := tgt.Data().(type) {
		case []float32:
			d[r*b.Tt] = 1
		case []float64:
			d[r*b.Tt] = 1
		}
	}
	return nil
}

// setMask writes 1 where ids are not pad and 0 where they are.
func setMask(t *tensor.Dense, ids []int, pad int) {
	switch d := t.Data().(type) {
	case []float32:
		for i, id := range ids {
			d[i] = 0
			if id != pad {
				d[i] = 1
			}
		}
	case []float64:
		for i, id := range ids {
			d[i] = 0
			if id != pad {
				d[i] = 1
			}
		}
	}
}

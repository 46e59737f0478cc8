package pretrain

// This file is the seq2seq objective's data: length-bucketed training
// batches, with noise for denoising and teacher distributions for
// distillation, and fixed validation batches.

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/train"
)

// Seq2SeqNoiser corrupts an example's source (denoising); rng is seeded per batch,
// so a resumed run draws the same noise.
type Seq2SeqNoiser func(ex seq2seq.Example, rng *rand.Rand) (seq2seq.Example, error)

// Seq2SeqData serves length-bucketed training batches and fixed validation
// batches, as the engine's train.Data.
type Seq2SeqData struct {
	cfg        seq2seq.Config
	train      []seq2seq.Example
	plan       *datasets.BucketPlan
	val        []train.Batch
	noise      Seq2SeqNoiser
	seed, next uint64         // batches served, seeding the noise
	soft       []seq2seq.Soft // the training examples' teacher distributions (SetTeacher)
}

// SetTeacher gives every training example its teacher distributions
// (seq2seq.TeacherTargets, in the order of the training examples): training
// batches then carry them (seq2seq.Batch.Teacher), validation batches do not.
func (d *Seq2SeqData) SetTeacher(soft []seq2seq.Soft) error {
	if len(soft) != len(d.train) {
		return fmt.Errorf("seq2seq: teacher distributions for %d examples, %d train", len(soft), len(d.train))
	}
	for i, s := range soft {
		if n := len(d.train[i].Tgt) + 1; s.K < 1 || len(s.IDs) != n*s.K || len(s.P) != n*s.K {
			return fmt.Errorf("seq2seq: training example %d has %d label positions but teacher distributions of %d ids and %d probabilities (top %d)", i, n, len(s.IDs), len(s.P), s.K)
		}
	}
	d.soft = soft
	return nil
}

// Distilling says whether training batches carry teacher distributions.
func (d *Seq2SeqData) Distilling() bool { return d.soft != nil }

// Seq2SeqBounds are the bucket lengths, up to max_len.
func Seq2SeqBounds(maxLen int) []int {
	var out []int
	for _, b := range []int{8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512} {
		if b < maxLen {
			out = append(out, b)
		}
	}
	return append(out, maxLen)
}

// NewSeq2SeqData buckets the examples into batches of at most rows pairs. With a
// noiser, each training and validation source is corrupted (validation
// once, with a fixed seed).
func NewSeq2SeqData(cfg seq2seq.Config, trainEx, valEx []seq2seq.Example, rows int, seed uint64, noise Seq2SeqNoiser) (*Seq2SeqData, error) {
	d := &Seq2SeqData{cfg: cfg, train: trainEx, noise: noise, seed: seed}
	bounds := Seq2SeqBounds(cfg.MaxLen)
	var err error
	if d.plan, err = seq2seqPlan(trainEx, bounds, rows, seed); err != nil {
		return nil, fmt.Errorf("training split: %w", err)
	}
	vp, err := seq2seqPlan(valEx, bounds, rows, seed)
	if err != nil {
		return nil, fmt.Errorf("validation split: %w", err)
	}
	rng := rand.New(rand.NewPCG(seed, 1<<62))
	for _, bb := range vp.All() {
		b, err := d.batch(valEx, nil, bb, rng)
		if err != nil {
			return nil, err
		}
		d.val = append(d.val, b)
	}
	return d, nil
}

// seq2seqPlan buckets examples by the longer of their two sides, so that source
// and target share one bound: a graph per bound rather than per pair of
// bounds. Every compiled graph keeps its buffers, so the number of shapes
// multiplies memory (with independent bounds, 22 shapes of 128 pairs took
// 24 GB). It also suits noise, which changes a source's length.
func seq2seqPlan(ex []seq2seq.Example, bounds []int, rows int, seed uint64) (*datasets.BucketPlan, error) {
	lens := make([]int, len(ex))
	for i, e := range ex {
		lens[i] = max(seq2seq.SourceLen(len(e.Src)), seq2seq.TargetLen(len(e.Tgt)))
	}
	return datasets.NewBucketPlan(lens, lens, bounds, rows, seed)
}

// TrainSize is the number of training pairs.
func (d *Seq2SeqData) TrainSize() int { return len(d.train) }

// Shapes implements train.ShapedData: the (B, Ts, Tt) of every training
// bucket, so that the engine compiles them all before the first step.
func (d *Seq2SeqData) Shapes() [][]int {
	var out [][]int
	for _, s := range d.plan.Shapes() {
		out = append(out, seq2seq.Batch{B: d.plan.Batch(), Ts: s[0], Tt: s[1]}.Shape())
	}
	return out
}

// Plan is the training bucket plan, for reports.
func (d *Seq2SeqData) Plan() *datasets.BucketPlan { return d.plan }

// batch makes the batch bb of ex; soft, if not nil, are ex's teacher
// distributions.
func (d *Seq2SeqData) batch(ex []seq2seq.Example, soft []seq2seq.Soft, bb datasets.Bucketed, rng *rand.Rand) (seq2seq.Batch, error) {
	srcs, tgts := make([][]int, len(bb.Idx)), make([][]int, len(bb.Idx))
	for i, j := range bb.Idx {
		e := ex[j]
		if d.noise != nil {
			var err error
			if e, err = d.noise(e, rng); err != nil {
				return seq2seq.Batch{}, fmt.Errorf("seq2seq: noise: %w", err)
			}
			e.Src = e.Src[:min(len(e.Src), bb.SrcT-1)]
		}
		srcs[i], tgts[i] = e.Src, e.Tgt
	}
	b, err := d.cfg.NewBatch(srcs, tgts, d.plan.Batch(), bb.SrcT, bb.TgtT)
	if err != nil {
		return seq2seq.Batch{}, fmt.Errorf("seq2seq: %w", err)
	}
	if soft != nil {
		v := d.cfg.TgtVocabSize
		b.Teacher = make([]float32, b.B*b.Tt*v)
		for i, j := range bb.Idx {
			s := soft[j]
			for pos := 0; pos < len(s.IDs)/s.K; pos++ {
				row := b.Teacher[(i*b.Tt+pos)*v:][:v]
				for q := pos * s.K; q < (pos+1)*s.K; q++ {
					row[s.IDs[q]] = s.P[q]
				}
			}
		}
	}
	return b, nil
}

// GroupSteps implements train.StepGrouper: n consecutive training batches
// share a bucket wherever they can (datasets.BucketPlan.SetGroup), so that
// the micro-batches of a step, which data-parallel ranks run side by side,
// are of one length. n = 1, one process without accumulation, changes
// nothing.
func (d *Seq2SeqData) GroupSteps(n int) error { return d.plan.SetGroup(n) }

// Next implements train.Data.
func (d *Seq2SeqData) Next() (train.Batch, error) {
	rng := rand.New(rand.NewPCG(d.seed, d.next))
	d.next++
	return d.batch(d.train, d.soft, d.plan.Next(), rng)
}

// Eval implements train.Data.
func (d *Seq2SeqData) Eval() ([]train.Batch, error) { return d.val, nil }

// State implements train.Data: the bucket plan's position and the count of
// batches served.
func (d *Seq2SeqData) State() ([]byte, error) {
	s, err := d.plan.State()
	if err != nil {
		return nil, err
	}
	return binary.LittleEndian.AppendUint64(s, d.next), nil
}

// Restore implements train.Data.
func (d *Seq2SeqData) Restore(state []byte) error {
	if len(state) < 8 {
		return fmt.Errorf("seq2seq: data state of %d bytes is too short", len(state))
	}
	n := len(state) - 8
	if err := d.plan.Restore(state[:n]); err != nil {
		return err
	}
	d.next = binary.LittleEndian.Uint64(state[n:])
	return nil
}

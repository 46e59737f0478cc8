package seq2seq

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/train"
)

// Noiser corrupts an example's source (denoising); rng is seeded per batch,
// so a resumed run draws the same noise.
type Noiser func(ex Example, rng *rand.Rand) (Example, error)

// Data serves length-bucketed training batches and fixed validation
// batches, as the engine's train.Data.
type Data struct {
	cfg        Config
	train      []Example
	plan       *datasets.BucketPlan
	val        []train.Batch
	noise      Noiser
	seed, next uint64 // batches served, seeding the noise
	soft       []Soft // the training examples' teacher distributions (SetTeacher)
}

// SetTeacher gives every training example its teacher distributions
// (TeacherTargets, in the order of the training examples): training
// batches then carry them (Batch.Teacher), validation batches do not.
func (d *Data) SetTeacher(soft []Soft) error {
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
func (d *Data) Distilling() bool { return d.soft != nil }

// DefaultBounds are the bucket lengths, up to max_len.
func DefaultBounds(maxLen int) []int {
	var out []int
	for _, b := range []int{8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512} {
		if b < maxLen {
			out = append(out, b)
		}
	}
	return append(out, maxLen)
}

// NewData buckets the examples into batches of at most rows pairs. With a
// noiser, each training and validation source is corrupted (validation
// once, with a fixed seed).
func NewData(cfg Config, trainEx, valEx []Example, rows int, seed uint64, noise Noiser) (*Data, error) {
	d := &Data{cfg: cfg, train: trainEx, noise: noise, seed: seed}
	bounds := DefaultBounds(cfg.MaxLen)
	var err error
	if d.plan, err = plan(trainEx, bounds, rows, seed); err != nil {
		return nil, fmt.Errorf("training split: %w", err)
	}
	vp, err := plan(valEx, bounds, rows, seed)
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

// plan buckets examples by the longer of their two sides, so that source
// and target share one bound: a graph per bound rather than per pair of
// bounds. Every compiled graph keeps its buffers, so the number of shapes
// multiplies memory (with independent bounds, 22 shapes of 128 pairs took
// 24 GB). It also suits noise, which changes a source's length.
func plan(ex []Example, bounds []int, rows int, seed uint64) (*datasets.BucketPlan, error) {
	lens := make([]int, len(ex))
	for i, e := range ex {
		lens[i] = max(SourceLen(len(e.Src)), TargetLen(len(e.Tgt)))
	}
	return datasets.NewBucketPlan(lens, lens, bounds, rows, seed)
}

// TrainSize is the number of training pairs.
func (d *Data) TrainSize() int { return len(d.train) }

// Shapes implements train.ShapedData: the (B, Ts, Tt) of every training
// bucket, so that the engine compiles them all before the first step.
func (d *Data) Shapes() [][]int {
	var out [][]int
	for _, s := range d.plan.Shapes() {
		out = append(out, Batch{B: d.plan.Batch(), Ts: s[0], Tt: s[1]}.Shape())
	}
	return out
}

// Plan is the training bucket plan, for reports.
func (d *Data) Plan() *datasets.BucketPlan { return d.plan }

// batch makes the batch bb of ex; soft, if not nil, are ex's teacher
// distributions.
func (d *Data) batch(ex []Example, soft []Soft, bb datasets.Bucketed, rng *rand.Rand) (Batch, error) {
	srcs, tgts := make([][]int, len(bb.Idx)), make([][]int, len(bb.Idx))
	for i, j := range bb.Idx {
		e := ex[j]
		if d.noise != nil {
			var err error
			if e, err = d.noise(e, rng); err != nil {
				return Batch{}, fmt.Errorf("seq2seq: noise: %w", err)
			}
			e.Src = e.Src[:min(len(e.Src), bb.SrcT-1)]
		}
		srcs[i], tgts[i] = e.Src, e.Tgt
	}
	b, err := d.cfg.NewBatch(srcs, tgts, d.plan.Batch(), bb.SrcT, bb.TgtT)
	if err != nil {
		return Batch{}, fmt.Errorf("seq2seq: %w", err)
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
func (d *Data) GroupSteps(n int) error { return d.plan.SetGroup(n) }

// Next implements train.Data.
func (d *Data) Next() (train.Batch, error) {
	rng := rand.New(rand.NewPCG(d.seed, d.next))
	d.next++
	return d.batch(d.train, d.soft, d.plan.Next(), rng)
}

// Eval implements train.Data.
func (d *Data) Eval() ([]train.Batch, error) { return d.val, nil }

// State implements train.Data: the bucket plan's position and the count of
// batches served.
func (d *Data) State() ([]byte, error) {
	s, err := d.plan.State()
	if err != nil {
		return nil, err
	}
	return binary.LittleEndian.AppendUint64(s, d.next), nil
}

// Restore implements train.Data.
func (d *Data) Restore(state []byte) error {
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

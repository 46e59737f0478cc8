package pretrain

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/train"
)

// seq2seqExamples are examples of 1 to 12 tokens, so that batches fall in
// several buckets.
func seq2seqExamples(n int, seed uint64) []seq2seq.Example {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]seq2seq.Example, n)
	for i := range out {
		l := 1 + rng.IntN(12)
		for range l {
			out[i].Src = append(out[i].Src, 4+rng.IntN(20))
		}
		for _, id := range out[i].Src {
			out[i].Tgt = append(out[i].Tgt, 4+(id+1)%20)
		}
	}
	return out
}

func seq2seqTinyConfig() seq2seq.Config {
	c := seq2seq.Tiny()
	c.SrcVocabSize, c.TgtVocabSize, c.Dropout = 24, 24, 0.1
	return c
}

// seq2seqCountingData cancels the run when the n-th training batch is
// drawn.
type seq2seqCountingData struct {
	*Seq2SeqData
	calls, at int
	cancel    func()
}

func (d *seq2seqCountingData) Next() (train.Batch, error) {
	d.calls++
	if d.calls == d.at {
		d.cancel()
	}
	return d.Seq2SeqData.Next()
}

// seq2seqFakeTok is never used to encode: the data is ids already.
type seq2seqFakeTok struct{ datasets.Tokenizer }

func (seq2seqFakeTok) Save(string) error { return nil }

// A run interrupted at step n and resumed (into a model with other initial
// weights) ends with exactly the weights of an uninterrupted run: bucket
// order, noise and dropout all continue where they were.
func TestSeq2SeqResumeExactly(t *testing.T) {
	const n = 6
	build := func(seed uint64) (*seq2seq.Model, *Seq2SeqData) {
		m, err := seq2seq.New(seq2seqTinyConfig(), layers.WithSeed(seed))
		require.NoError(t, err)
		noise := datasets.NoiseConfig{MaskRatio: 0.3, PoissonLambda: 2, MaskID: seq2seq.MaskID}
		d, err := NewSeq2SeqData(m.Config, seq2seqExamples(200, 1), seq2seqExamples(20, 2), 8, 5, func(ex seq2seq.Example, rng *rand.Rand) (seq2seq.Example, error) {
			src, err := datasets.Noise(ex.Src, noise, rng)
			return seq2seq.Example{Src: src, Tgt: ex.Tgt}, err
		})
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(d.Plan().Shapes()), 3, "several bucket shapes")
		return m, d
	}
	cfg := DefaultSeq2SeqTrainConfig()
	cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps, cfg.LRFactor = 2*n, 5, 4, 0, 2
	trainer := func(m *seq2seq.Model, d train.Data, dir string) *train.Trainer {
		sched, err := train.Noam(m.Config.DModel, cfg.WarmupSteps, cfg.LRFactor)
		require.NoError(t, err)
		tr, err := train.New(&Seq2SeqTask{Model: m, Tok: seq2seqFakeTok{}, Smoothing: 0.1}, d, train.Config{Steps: cfg.MaxSteps, EvalEvery: cfg.EvalSteps,
			Dir: dir, Seed: 9, AdamW: train.AdamWConfig{Beta1: 0.9, Beta2: 0.98, Eps: 1e-9}, Schedule: sched})
		require.NoError(t, err)
		return tr
	}

	whole, d := build(1)
	tr := trainer(whole, d, t.TempDir())
	_, err := tr.Run(context.Background(), nil)
	require.NoError(t, err)
	tr.Close()

	split := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	m, d := build(1)
	tr = trainer(m, &seq2seqCountingData{Seq2SeqData: d, at: n, cancel: cancel}, split)
	_, err = tr.Run(ctx, nil)
	require.True(t, errors.Is(err, train.ErrInterrupted), "%v", err)
	tr.Close()
	ckpt, err := train.Latest(split)
	require.NoError(t, err)
	require.Equal(t, "step-000006", filepath.Base(ckpt))

	resumed, d := build(77)
	tr = trainer(resumed, d, split)
	require.NoError(t, tr.Resume(ckpt))
	_, err = tr.Run(context.Background(), nil)
	require.NoError(t, err)
	tr.Close()
	for i, p := range whole.Store.Params() {
		require.Equal(t, p.Value.Data(), resumed.Store.Params()[i].Value.Data(), p.Name)
	}
}

// The distillation loss on a batch without teacher distributions
// (validation), or with the label-smoothed one-hot as the teacher, is the
// plain loss; another teacher changes it.
func TestSeq2SeqDistillLossWithoutTeacher(t *testing.T) {
	m, err := seq2seq.New(seq2seqTinyConfig(), layers.WithSeed(4))
	require.NoError(t, err)
	ex := seq2seqExamples(8, 5)
	b, err := m.Config.NewBatch(seq2seqSrcs(ex), seq2seqTgts(ex), 8, 13, 13)
	require.NoError(t, err)
	lossOf := func(k *Seq2SeqTask, b seq2seq.Batch) float64 {
		g := m.Store.NewGraph()
		loss, load, err := k.LossFor(g, b.Shape())
		require.NoError(t, err)
		vm, err := g.Machine()
		require.NoError(t, err)
		defer vm.Close()
		require.NoError(t, load(b))
		require.NoError(t, vm.RunAll())
		return scalarOf(loss.Value())
	}
	plain := lossOf(&Seq2SeqTask{Model: m, Smoothing: 0.1}, b)
	distill := &Seq2SeqTask{Model: m, Smoothing: 0.1, Distill: 0.5}
	require.InDelta(t, plain, lossOf(distill, b), 1e-6)
	v := m.Config.TgtVocabSize
	withTeacher := b
	withTeacher.Teacher = make([]float32, b.B*b.Tt*v)
	for r, y := range b.Labels {
		if y == layers.IgnoreIndex {
			continue
		}
		for j := 0; j < v; j++ {
			withTeacher.Teacher[r*v+j] = float32(0.1 / float64(v))
		}
		withTeacher.Teacher[r*v+y] += 0.9
	}
	require.InDelta(t, plain, lossOf(distill, withTeacher), 1e-6)
	for i := range withTeacher.Teacher {
		withTeacher.Teacher[i] = 0
	}
	for r, y := range b.Labels {
		if y != layers.IgnoreIndex {
			withTeacher.Teacher[r*v+4+(y+3)%20] = 1
		}
	}
	require.Greater(t, lossOf(distill, withTeacher), plain+0.1, "a teacher that disagrees with the references")
}

func seq2seqSrcs(ex []seq2seq.Example) [][]int {
	out := make([][]int, len(ex))
	for i, e := range ex {
		out[i] = e.Src
	}
	return out
}

func seq2seqTgts(ex []seq2seq.Example) [][]int {
	out := make([][]int, len(ex))
	for i, e := range ex {
		out[i] = e.Tgt
	}
	return out
}

func scalarOf(v any) float64 {
	switch x := v.(type) {
	case interface{ Data() any }:
		switch d := x.Data().(type) {
		case float32:
			return float64(d)
		case float64:
			return d
		}
	}
	panic("not a float scalar")
}

// Learning from the teacher: the references map each source token s to
// 4+(s+1)%20, a teacher that is sure of 4+(s+2)%20 instead. A student
// trained with alpha 1 predicts the teacher's tokens, one trained with
// alpha 0 (no distillation) the references', each at its own positions.
func TestSeq2SeqDistillLearnsTheTeacher(t *testing.T) {
	ex := seq2seqExamples(200, 6)
	teacher := make([]seq2seq.Soft, len(ex))
	for i, e := range ex {
		s := seq2seq.Soft{K: 1}
		for _, id := range e.Src {
			s.IDs, s.P = append(s.IDs, int32(4+(id+2)%20)), append(s.P, 1)
		}
		s.IDs, s.P = append(s.IDs, 2), append(s.P, 1) // eos
		teacher[i] = s
	}
	agreement := func(alpha float64) (withTeacher, withReference float64) {
		m, err := seq2seq.New(seq2seqTinyConfig(), layers.WithSeed(3))
		require.NoError(t, err)
		d, err := NewSeq2SeqData(m.Config, ex, seq2seqExamples(20, 7), 16, 5, nil)
		require.NoError(t, err)
		if alpha > 0 {
			require.NoError(t, d.SetTeacher(teacher))
		}
		sched, err := train.WarmupCosine(3e-3, 3e-4, 20, 300)
		require.NoError(t, err)
		tr, err := train.New(&Seq2SeqTask{Model: m, Tok: seq2seqFakeTok{}, Smoothing: 0.1, Distill: alpha}, d, train.Config{Steps: 300, EvalEvery: 300,
			Dir: t.TempDir(), Seed: 1, AdamW: train.AdamWConfig{Beta1: 0.9, Beta2: 0.98, Eps: 1e-9}, Schedule: sched})
		require.NoError(t, err)
		_, err = tr.Run(context.Background(), nil)
		tr.Close()
		require.NoError(t, err)
		got, err := seq2seq.TeacherTargets([]*seq2seq.Model{m}, ex[:50], 1, 16)
		require.NoError(t, err)
		var n, tch, ref int
		for i, e := range ex[:50] {
			for pos, s := range e.Src {
				n++
				if got[i].IDs[pos] == int32(4+(s+2)%20) {
					tch++
				}
				if got[i].IDs[pos] == int32(4+(s+1)%20) {
					ref++
				}
			}
		}
		return float64(tch) / float64(n), float64(ref) / float64(n)
	}
	// 300 steps teach the tiny model about 40% of either mapping; which
	// one it learned is the point.
	tch, ref := agreement(1)
	t0, r0 := agreement(0)
	t.Logf("share of positions predicted as the teacher and as the references: alpha 1 %.3f, %.3f; alpha 0 %.3f, %.3f", tch, ref, t0, r0)
	require.Greater(t, tch, 0.25, "alpha 1 follows the teacher")
	require.Less(t, ref, tch/5)
	require.Greater(t, r0, 0.25, "no distillation follows the references")
	require.Less(t, t0, r0/5)
}

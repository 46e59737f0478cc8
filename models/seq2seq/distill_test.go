package seq2seq

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/train"
)

// alone is m's next-token distribution at every label position of one
// example run by itself, at its own lengths: what batching, sorting and
// padding in TeacherTargets must not change.
func alone(t *testing.T, m *Model, ex Example) [][]float64 {
	t.Helper()
	ts, tt := SourceLen(len(ex.Src)), TargetLen(len(ex.Tgt))
	g := m.Store.NewGraph()
	f := m.NewFeed(g, 1, ts, tt)
	logits, err := m.Forward(g, f.Inputs)
	require.NoError(t, err)
	vm, err := g.Machine()
	require.NoError(t, err)
	defer vm.Close()
	b, err := m.Config.NewBatch([][]int{ex.Src}, [][]int{ex.Tgt}, 1, ts, tt)
	require.NoError(t, err)
	require.NoError(t, f.Load(b))
	require.NoError(t, vm.RunAll())
	v := m.Config.TgtVocabSize
	x := logits.Value().(*tensor.Dense).Data().([]float32)
	out := make([][]float64, tt)
	for pos := range out {
		row := make([]float64, v)
		var sum float64
		mx := float64(slices.Max(x[pos*v : (pos+1)*v]))
		for j := range row {
			row[j] = math.Exp(float64(x[pos*v+j]) - mx)
			sum += row[j]
		}
		for j := range row {
			row[j] /= sum
		}
		out[pos] = row
	}
	return out
}

// TeacherTargets gives each example the teachers' mean distribution at
// each label position, as each teacher computes it for the example alone;
// top k keeps the k most probable, largest first, renormalised.
func TestTeacherTargets(t *testing.T) {
	a, err := New(tinyConfig(), layers.WithSeed(1))
	require.NoError(t, err)
	b, err := New(tinyConfig(), layers.WithSeed(2))
	require.NoError(t, err)
	ex := examples(30, 3)
	v := a.Config.TgtVocabSize
	soft, err := TeacherTargets([]*Model{a, b}, ex, v, 8)
	require.NoError(t, err)
	top3, err := TeacherTargets([]*Model{a, b}, ex, 3, 8)
	require.NoError(t, err)
	for _, i := range []int{0, 7, 29} {
		pa, pb := alone(t, a, ex[i]), alone(t, b, ex[i])
		s := soft[i]
		require.Equal(t, v, s.K)
		require.Len(t, s.P, (len(ex[i].Tgt)+1)*v, "one row per target token and eos")
		for pos := 0; pos <= len(ex[i].Tgt); pos++ {
			for q := pos * v; q < (pos+1)*v; q++ {
				id := s.IDs[q]
				require.InDelta(t, (pa[pos][id]+pb[pos][id])/2, float64(s.P[q]), 2e-6, "example %d position %d id %d", i, pos, id)
			}
			// The top 3: the three largest of the mean, renormalised.
			mean := make([]float64, v)
			for j := range mean {
				mean[j] = (pa[pos][j] + pb[pos][j]) / 2
			}
			order := make([]int, v)
			for j := range order {
				order[j] = j
			}
			slices.SortFunc(order, func(x, y int) int { return -cmpFloat(mean[x], mean[y]) })
			sum := mean[order[0]] + mean[order[1]] + mean[order[2]]
			for r := 0; r < 3; r++ {
				require.Equal(t, int32(order[r]), top3[i].IDs[pos*3+r])
				require.InDelta(t, mean[order[r]]/sum, float64(top3[i].P[pos*3+r]), 2e-6)
			}
		}
	}
	_, err = TeacherTargets([]*Model{a}, ex, v+1, 8)
	require.ErrorContains(t, err, "distill_top_k 25 must be in [1, 24]")
	_, err = TeacherTargets(nil, ex, 3, 8)
	require.ErrorContains(t, err, "needs a teacher")
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// The distillation loss on a batch without teacher distributions
// (validation), or with the label-smoothed one-hot as the teacher, is the
// plain loss; another teacher changes it.
func TestDistillLossWithoutTeacher(t *testing.T) {
	m, err := New(tinyConfig(), layers.WithSeed(4))
	require.NoError(t, err)
	ex := examples(8, 5)
	b, err := m.Config.NewBatch(srcsOf(ex), tgtsOf(ex), 8, 13, 13)
	require.NoError(t, err)
	lossOf := func(k *Task, b Batch) float64 {
		g := m.Store.NewGraph()
		loss, load, err := k.LossFor(g, b.Shape())
		require.NoError(t, err)
		vm, err := g.Machine()
		require.NoError(t, err)
		defer vm.Close()
		require.NoError(t, load(b))
		require.NoError(t, vm.RunAll())
		return floatOf(loss.Value())
	}
	plain := lossOf(&Task{Model: m, Smoothing: 0.1}, b)
	distill := &Task{Model: m, Smoothing: 0.1, Distill: 0.5}
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

func srcsOf(ex []Example) [][]int {
	out := make([][]int, len(ex))
	for i, e := range ex {
		out[i] = e.Src
	}
	return out
}

func tgtsOf(ex []Example) [][]int {
	out := make([][]int, len(ex))
	for i, e := range ex {
		out[i] = e.Tgt
	}
	return out
}

func floatOf(v any) float64 {
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
func TestDistillLearnsTheTeacher(t *testing.T) {
	ex := examples(200, 6)
	teacher := make([]Soft, len(ex))
	for i, e := range ex {
		s := Soft{K: 1}
		for _, id := range e.Src {
			s.IDs, s.P = append(s.IDs, int32(4+(id+2)%20)), append(s.P, 1)
		}
		s.IDs, s.P = append(s.IDs, 2), append(s.P, 1) // eos
		teacher[i] = s
	}
	agreement := func(alpha float64) (withTeacher, withReference float64) {
		m, err := New(tinyConfig(), layers.WithSeed(3))
		require.NoError(t, err)
		d, err := NewData(m.Config, ex, examples(20, 7), 16, 5, nil)
		require.NoError(t, err)
		if alpha > 0 {
			require.NoError(t, d.SetTeacher(teacher))
		}
		sched, err := train.WarmupCosine(3e-3, 3e-4, 20, 300)
		require.NoError(t, err)
		tr, err := train.New(&Task{Model: m, Tok: fakeTok{}, Smoothing: 0.1, Distill: alpha}, d, train.Config{Steps: 300, EvalEvery: 300,
			Dir: t.TempDir(), Seed: 1, AdamW: train.AdamWConfig{Beta1: 0.9, Beta2: 0.98, Eps: 1e-9}, Schedule: sched})
		require.NoError(t, err)
		_, err = tr.Run(context.Background(), nil)
		tr.Close()
		require.NoError(t, err)
		got, err := TeacherTargets([]*Model{m}, ex[:50], 1, 16)
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

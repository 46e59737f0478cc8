package seq2seq

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
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

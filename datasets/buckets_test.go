package datasets

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// skewedLengths returns n (source, target) lengths in [1, 32], most of
// them short, as in a phrase corpus: a few long examples among many
// short ones.
func skewedLengths(n int, seed uint64) (src, tgt []int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for range n {
		s := 1 + int(rng.ExpFloat64()*5)
		if s > 32 {
			s = 32
		}
		t := min(max(1, s+rng.IntN(5)-2), 32)
		src, tgt = append(src, s), append(tgt, t)
	}
	return src, tgt
}

// checkEpoch asserts that batches hold every example exactly once, each
// in a batch whose shape is its smallest fitting bounds.
func checkEpoch(t *testing.T, batches []Bucketed, src, tgt, bounds []int, batch int) {
	t.Helper()
	seen := make([]int, len(src))
	smallest := func(n int) int {
		for _, b := range bounds {
			if n <= b {
				return b
			}
		}
		return -1
	}
	for _, b := range batches {
		require.NotEmpty(t, b.Idx)
		require.LessOrEqual(t, len(b.Idx), batch)
		for _, i := range b.Idx {
			seen[i]++
			assert.Equal(t, smallest(src[i]), b.SrcT, "example %d (%d, %d)", i, src[i], tgt[i])
			assert.Equal(t, smallest(tgt[i]), b.TgtT, "example %d (%d, %d)", i, src[i], tgt[i])
		}
	}
	for i, n := range seen {
		require.Equal(t, 1, n, "example %d seen %d times", i, n)
	}
}

func TestBucketPlanEpochs(t *testing.T) {
	src, tgt := skewedLengths(1000, 7)
	bounds := []int{8, 16, 24, 32}
	p, err := NewBucketPlan(src, tgt, bounds, 16, 42)
	require.NoError(t, err)
	assert.Equal(t, 16, p.Batch())
	nb := p.NumBatches()
	assert.Zero(t, p.Epoch())

	var epochs [][]Bucketed
	for e := range 3 {
		var ep []Bucketed
		for range nb {
			ep = append(ep, p.Next())
		}
		assert.Equal(t, e+1, p.Epoch())
		checkEpoch(t, ep, src, tgt, bounds, 16)
		epochs = append(epochs, ep)
	}
	assert.NotEqual(t, epochs[0], epochs[1], "each epoch shuffles anew")

	// Only a bucket's last batch is short: per shape, at most one.
	short := map[[2]int]int{}
	for _, b := range epochs[0] {
		if len(b.Idx) < 16 {
			short[[2]int{b.SrcT, b.TgtT}]++
		}
	}
	for s, n := range short {
		assert.Equal(t, 1, n, "shape %v", s)
	}
	// Batch order mixes buckets: the first few batches are not all one shape.
	shapes := map[[2]int]bool{}
	for _, b := range epochs[0][:10] {
		shapes[[2]int{b.SrcT, b.TgtT}] = true
	}
	assert.Greater(t, len(shapes), 1)

	// The same seed gives the same batches; another seed others.
	q, err := NewBucketPlan(src, tgt, bounds, 16, 42)
	require.NoError(t, err)
	r, err := NewBucketPlan(src, tgt, bounds, 16, 43)
	require.NoError(t, err)
	for i := range nb {
		assert.Equal(t, epochs[0][i], q.Next())
	}
	var other []Bucketed
	for range nb {
		other = append(other, r.Next())
	}
	assert.NotEqual(t, epochs[0], other)

	// Next's result is the caller's: changing it changes nothing.
	b := p.Next()
	kept := slices.Clone(b.Idx)
	clear(b.Idx)
	assert.Equal(t, kept, p.order[p.cursor-1].Idx)
}

func TestBucketPlanAllAndShapes(t *testing.T) {
	src := []int{3, 9, 2, 30, 8, 9, 17, 1}
	tgt := []int{4, 9, 1, 31, 9, 16, 8, 1}
	p, err := NewBucketPlan(src, tgt, []int{8, 16, 32}, 2, 1)
	require.NoError(t, err)
	assert.Equal(t, [][2]int{{8, 8}, {8, 16}, {16, 16}, {32, 8}, {32, 32}}, p.Shapes())
	want := []Bucketed{
		{Idx: []int{0, 2}, SrcT: 8, TgtT: 8},
		{Idx: []int{7}, SrcT: 8, TgtT: 8},
		{Idx: []int{4}, SrcT: 8, TgtT: 16},
		{Idx: []int{1, 5}, SrcT: 16, TgtT: 16},
		{Idx: []int{6}, SrcT: 32, TgtT: 8},
		{Idx: []int{3}, SrcT: 32, TgtT: 32},
	}
	all := p.All()
	assert.Equal(t, want, all)
	checkEpoch(t, all, src, tgt, []int{8, 16, 32}, 2)
	assert.Len(t, all, p.NumBatches())
	assert.Equal(t, all, p.All(), "fixed order")
	p.Next()
	assert.Equal(t, all, p.All(), "independent of Next")
}

func TestBucketPlanPadding(t *testing.T) {
	src, tgt := skewedLengths(5000, 3)
	bounds := []int{4, 8, 12, 16, 24, 32}
	p, err := NewBucketPlan(src, tgt, bounds, 32, 1)
	require.NoError(t, err)
	// Padding everything to the last bound, as one fixed shape would.
	tokens := 0
	for i := range src {
		tokens += src[i] + tgt[i]
	}
	flat := 1 - float64(tokens)/float64(len(src)*2*32)
	got := p.PaddingFraction()
	t.Logf("padding: %.1f%% bucketed over %d shapes, %.1f%% padded to %d", 100*got, len(p.Shapes()), 100*flat, 32)
	assert.Greater(t, flat, 0.7)
	assert.Less(t, got, 0.3)
	assert.Less(t, got, flat/3)

	// The same fraction counted from an epoch of Next.
	pad, slots := 0, 0
	for range p.NumBatches() {
		b := p.Next()
		for _, i := range b.Idx {
			pad += b.SrcT - src[i] + b.TgtT - tgt[i]
			slots += b.SrcT + b.TgtT
		}
	}
	assert.InDelta(t, float64(pad)/float64(slots), got, 1e-12)

	// Lengths exactly on the bounds: no padding at all.
	q, err := NewBucketPlan([]int{8, 16, 8}, []int{16, 16, 8}, []int{8, 16}, 2, 1)
	require.NoError(t, err)
	assert.Zero(t, q.PaddingFraction())
}

func TestBucketPlanStateRestore(t *testing.T) {
	src, tgt := skewedLengths(300, 5)
	bounds := []int{8, 16, 32}
	newPlan := func(seed uint64) *BucketPlan {
		p, err := NewBucketPlan(src, tgt, bounds, 8, seed)
		require.NoError(t, err)
		return p
	}
	nb := newPlan(1).NumBatches()
	// Saved before the first batch, mid-epoch, at an epoch's end and in a
	// later epoch.
	for _, n := range []int{0, 5, nb, nb + 3, 2*nb - 1} {
		p := newPlan(9)
		for range n {
			p.Next()
		}
		state, err := p.State()
		require.NoError(t, err)
		var want []Bucketed
		for range nb + 5 { // across the next epoch boundary
			want = append(want, p.Next())
		}
		q := newPlan(1234) // the seed does not matter once restored
		q.Next()
		require.NoError(t, q.Restore(state), "after %d batches", n)
		assert.Equal(t, (n+nb-1)/nb, q.Epoch(), "after %d batches", n)
		for i, w := range want {
			require.Equal(t, w, q.Next(), "after %d batches, batch %d", n, i)
		}
	}

	p := newPlan(1)
	state, err := p.State()
	require.NoError(t, err)
	other, err := NewBucketPlan(src, tgt, bounds, 9, 1) // another batch size
	require.NoError(t, err)
	assert.ErrorContains(t, other.Restore(state), "datasets: bucket plan restore: the state is of a plan with other lengths")
	assert.ErrorContains(t, p.Restore(nil), "datasets: bucket plan restore: not a bucket plan state (0 bytes)")
	assert.ErrorContains(t, p.Restore(state[:len(state)-1]), "datasets: bucket plan restore: ")
	bad := slices.Clone(state)
	bad[9+7] = 1     // epoch 1
	bad[17+7] = 0xff // batch 255 of it
	assert.ErrorContains(t, p.Restore(bad), "corrupt state")
}

func TestBucketPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		src, tgt, bounds []int
		batch            int
		want             string
	}{
		{nil, nil, []int{8}, 1, "no examples"},
		{[]int{1, 2}, []int{1}, []int{8}, 1, "2 source lengths but 1 target lengths"},
		{[]int{1}, []int{1}, []int{8}, 0, "batch 0 must be positive"},
		{[]int{1}, []int{1}, nil, 1, "no bounds"},
		{[]int{1}, []int{1}, []int{0, 8}, 1, "bound 0 is 0, must be positive"},
		{[]int{1}, []int{1}, []int{8, 8}, 1, "bounds must be strictly ascending: 8 follows 8"},
		{[]int{1}, []int{1}, []int{16, 8}, 1, "bounds must be strictly ascending: 8 follows 16"},
		{[]int{1, 0}, []int{1, 3}, []int{8}, 1, "example 1 has lengths (0, 3), both must be at least 1"},
		{[]int{1, 3}, []int{1, 9}, []int{4, 8}, 1, "example 1 has lengths (3, 9), longer than the last bound 8: truncate or drop it first"},
	} {
		_, err := NewBucketPlan(tc.src, tc.tgt, tc.bounds, tc.batch, 1)
		assert.EqualError(t, err, "datasets: bucket plan: "+tc.want)
	}
}

// With SetGroup(g), an epoch is groups of g consecutive batches, aligned
// at multiples of g: all of one shape except at most one mixed group per
// bucket (its leftovers), every example in the epoch at least once, only
// the last leftover group's fill repeated; the order resumes exactly, and
// g = 1 is the plan without groups.
func TestBucketPlanGroups(t *testing.T) {
	src, tgt := skewedLengths(1000, 7)
	bounds := []int{8, 16, 24, 32}
	newPlan := func(g int) *BucketPlan {
		p, err := NewBucketPlan(src, tgt, bounds, 16, 42)
		require.NoError(t, err)
		if g > 0 {
			require.NoError(t, p.SetGroup(g))
		}
		return p
	}
	plain, one := newPlan(0), newPlan(1)
	for range 2 * plain.NumBatches() {
		require.Equal(t, plain.Next(), one.Next())
	}

	mixed2 := 0 // mixed groups of g = 2 in the first epoch
	for _, g := range []int{2, 3, 4} {
		p := newPlan(g)
		nb := p.NumBatches()
		require.Zero(t, nb%g)
		require.Less(t, nb-newPlan(0).NumBatches(), g, "at most g-1 batches added")
		buckets := len(p.Shapes())
		for epoch := range 2 {
			seen := make([]int, len(src))
			mixed := 0
			for k := 0; k < nb; k += g {
				var shapes [][2]int
				for range g {
					b := p.Next()
					for _, i := range b.Idx {
						seen[i]++
					}
					if s := [2]int{b.SrcT, b.TgtT}; !slices.Contains(shapes, s) {
						shapes = append(shapes, s)
					}
				}
				if len(shapes) > 1 {
					mixed++
				}
			}
			assert.LessOrEqual(t, mixed, buckets, "g %d epoch %d: mixed groups", g, epoch)
			if g == 2 && epoch == 0 {
				mixed2 = mixed
			}
			repeated := 0
			for i, n := range seen {
				require.GreaterOrEqual(t, n, 1, "g %d epoch %d: example %d not served", g, epoch, i)
				repeated += n - 1
			}
			assert.LessOrEqual(t, repeated, (g-1)*16, "g %d epoch %d", g, epoch)
		}
		if g == 2 {
			// Fewer mixed groups than in the ungrouped order.
			q := newPlan(0)
			mixedPlain := 0
			for k := 0; k < nb; k += 2 {
				a, b := q.Next(), q.Next()
				if a.SrcT != b.SrcT || a.TgtT != b.TgtT {
					mixedPlain++
				}
			}
			t.Logf("g 2: %d of %d pairs mixed, %d without groups", mixed2, nb/2, mixedPlain)
			assert.Greater(t, mixedPlain, 2*mixed2, "the ungrouped order mixes shapes more often: the test can tell")
		}
	}

	// Resume mid-epoch and across the epoch boundary.
	p := newPlan(2)
	for range 7 {
		p.Next()
	}
	state, err := p.State()
	require.NoError(t, err)
	var want []Bucketed
	for range p.NumBatches() {
		want = append(want, p.Next())
	}
	q := newPlan(2)
	require.NoError(t, q.Restore(state))
	for i, w := range want {
		require.Equal(t, w, q.Next(), "batch %d after resuming", i)
	}
	require.ErrorContains(t, newPlan(3).Restore(state), "batch size or group size")
	require.ErrorContains(t, newPlan(0).Restore(state), "batch size or group size")

	require.ErrorContains(t, newPlan(0).SetGroup(0), "need at least 1")
	started := newPlan(0)
	started.Next()
	require.ErrorContains(t, started.SetGroup(2), "after the first batch")
}

package datasets

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bart is BART's noise setting, with mask id 0 and end-of-sentence id 1;
// test inputs use ids ≥ 2 unless they mean to end sentences.
var bart = NoiseConfig{MaskRatio: 0.3, PoissonLambda: 3.5, PermuteSentences: true, MaskID: 0, EndOfSentence: []int{1}}

// counting returns the ids from, from+1, …, from+n-1.
func counting(from, n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = from + i
	}
	return ids
}

// infillSpans checks that out is ids with disjoint spans each replaced by
// one mask (ids distinct and ascending, none a mask) and returns the
// number of masked tokens and the lengths of the masked spans between kept
// tokens (a gap of g tokens under m adjacent masks counts as m spans of
// total g; a mask over no tokens is an insertion).
func infillSpans(t *testing.T, ids, out []int, mask int) (masked, masks, inserts int) {
	t.Helper()
	at := 0 // next index of ids not yet accounted for
	run := 0
	flush := func(next int) { // the run of masks before ids[next]
		gap := next - at
		require.False(t, gap > 0 && run == 0, "tokens %v dropped without a mask", ids[at:next])
		masked += gap
		masks += run
		if gap == 0 {
			inserts += run
		}
		run = 0
	}
	for _, id := range out {
		if id == mask {
			run++
			continue
		}
		i := slices.Index(ids, id)
		require.GreaterOrEqual(t, i, at, "kept token %d out of order", id)
		flush(i)
		at = i + 1
	}
	flush(len(ids))
	return masked, masks, inserts
}

func TestNoiseMaskRatio(t *testing.T) {
	c := bart
	c.PermuteSentences = false
	rng := rand.New(rand.NewPCG(1, 2))
	var masked, tokens, masks, spanTokens, spanMasks, inserts, shorter int
	for range 2000 {
		n := 5 + rng.IntN(60)
		ids := counting(2, n)
		out := mustNoise(t, ids, c, rng)
		m, k, ins := infillSpans(t, ids, out, c.MaskID)
		masked += m
		tokens += n
		masks += k
		inserts += ins
		if m > 0 {
			spanTokens += m
			spanMasks += k - ins
		}
		if len(out) < n {
			shorter++
		}
		assert.Equal(t, n-m+k, len(out))
	}
	ratio := float64(masked) / float64(tokens)
	meanSpan := float64(spanTokens) / float64(spanMasks)
	t.Logf("masked %.4f of %d tokens; %d masks, %d insertions; %.2f tokens per span mask; %d/2000 shorter",
		ratio, tokens, masks, inserts, meanSpan, shorter)
	// The number masked is n·0.3 rounded at random: the ratio is exact in
	// expectation, with a tiny variance.
	assert.InDelta(t, 0.3, ratio, 0.005)
	// Spans are Poisson(3.5) truncated to the budget, so a mask stands for
	// about three tokens, and a few spans are empty insertions.
	assert.InDelta(t, 3.2, meanSpan, 0.5)
	assert.Greater(t, inserts, 0)
	assert.Less(t, inserts, masks/10)
	assert.Greater(t, shorter, 1900, "replacing spans by one mask shortens the input")
}

func TestNoiseLargeLambdaMasksOneSpan(t *testing.T) {
	// λ = 1000: the first span takes the whole budget, which is exact for
	// n·ratio an integer: 30 of 100 tokens under one mask.
	c := NoiseConfig{MaskRatio: 0.3, PoissonLambda: 1000, MaskID: 0}
	rng := rand.New(rand.NewPCG(5, 5))
	ids := counting(2, 100)
	for range 20 {
		out := mustNoise(t, ids, c, rng)
		masked, masks, inserts := infillSpans(t, ids, out, 0)
		assert.Equal(t, 30, masked)
		assert.Equal(t, 1, masks)
		assert.Zero(t, inserts)
		assert.Len(t, out, 71)
	}
}

func TestNoiseSmallLambdaInserts(t *testing.T) {
	// λ = 0.01: nearly every draw is 0, so spans are mostly insertions,
	// capped at n+1; it must not take 100 draws per masked token.
	c := NoiseConfig{MaskRatio: 0.5, PoissonLambda: 0.01, MaskID: 0}
	rng := rand.New(rand.NewPCG(6, 6))
	ids := counting(2, 40)
	out := mustNoise(t, ids, c, rng)
	masked, masks, _ := infillSpans(t, ids, out, 0)
	assert.Equal(t, 20, masked)
	// 41 insertions, and about 20 spans of one token (P(2 | ≥ 1) ≈ λ/2).
	assert.LessOrEqual(t, masks, 41+20)
	assert.GreaterOrEqual(t, masks, 41+17)
}

func TestNoisePermuteSentences(t *testing.T) {
	c := NoiseConfig{PermuteSentences: true, PoissonLambda: 3.5, MaskID: 0, EndOfSentence: []int{1, 99}}
	// Sentences: [10 11 1] [12 1 99] (a run of ends stays together)
	// [13 14 15 99] [16 17] (a trailing piece without an end).
	ids := []int{10, 11, 1, 12, 1, 99, 13, 14, 15, 99, 16, 17}
	sentences := [][]int{{10, 11, 1}, {12, 1, 99}, {13, 14, 15, 99}, {16, 17}}
	input := slices.Clone(ids)
	rng := rand.New(rand.NewPCG(3, 4))
	orders := map[string]int{}
	for range 500 {
		out := mustNoise(t, ids, c, rng)
		assert.Equal(t, input, ids, "the input is not modified")
		assert.ElementsMatch(t, ids, out, "the same multiset of tokens")
		// out is a concatenation of the sentences in some order.
		var order []byte
		for rest := out; len(rest) > 0; {
			found := false
			for k, s := range sentences {
				if len(rest) >= len(s) && slices.Equal(rest[:len(s)], s) {
					order = append(order, byte('a'+k))
					rest = rest[len(s):]
					found = true
					break
				}
			}
			require.True(t, found, "%v is not a permutation of the sentences", out)
		}
		orders[string(order)]++
	}
	assert.Len(t, orders, 24, "all 4! orders occur")

	// One sentence, or none ended: unchanged.
	assert.Equal(t, []int{5, 6, 1}, mustNoise(t, []int{5, 6, 1}, c, rng))
	assert.Equal(t, []int{5, 6, 7}, mustNoise(t, []int{5, 6, 7}, c, rng))
}

func TestNoiseDeterministic(t *testing.T) {
	ids := counting(2, 200)
	for i := 20; i < 200; i += 20 {
		ids[i] = 1 // sentence ends
	}
	run := func(seed uint64) [][]int {
		rng := rand.New(rand.NewPCG(seed, 0))
		var outs [][]int
		for range 10 {
			outs = append(outs, mustNoise(t, ids, bart, rng))
		}
		return outs
	}
	assert.Equal(t, run(7), run(7))
	assert.NotEqual(t, run(7), run(8))
	// Both noises at once: masked tokens are gone, the rest is a
	// permutation of a subset.
	for _, out := range run(7) {
		kept := slices.DeleteFunc(slices.Clone(out), func(id int) bool { return id == bart.MaskID })
		assert.Less(t, len(kept), len(ids))
		for _, id := range kept {
			assert.Contains(t, ids, id)
		}
	}
}

func TestNoiseEdgeCases(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	assert.Equal(t, []int{}, mustNoise(t, nil, bart, rng))
	assert.Equal(t, []int{}, mustNoise(t, []int{}, bart, rng))

	// Ratio 1: every token masked, by as many masks as spans.
	all := NoiseConfig{MaskRatio: 1, PoissonLambda: 3.5, MaskID: 0}
	out := mustNoise(t, counting(2, 50), all, rng)
	assert.NotContains(t, out, 2)
	assert.Equal(t, len(out), slices.Index(append(slices.Clone(out), -1), -1))
	for _, id := range out {
		assert.Equal(t, 0, id)
	}

	// Ratio 0 without permutation: an equal copy, not the same array.
	ids := counting(2, 10)
	none := NoiseConfig{PoissonLambda: 3.5, MaskID: 0}
	out = mustNoise(t, ids, none, rng)
	assert.Equal(t, ids, out)
	out[0] = -5
	assert.Equal(t, 2, ids[0])

	// An invalid config is an error.
	_, err := Noise(ids, NoiseConfig{MaskRatio: 0.3}, rng)
	assert.EqualError(t, err, "datasets: noise config: Poisson λ 0 must be positive and finite")
}

func TestNoiseConfigValidate(t *testing.T) {
	require.NoError(t, bart.Validate())
	require.NoError(t, NoiseConfig{MaskRatio: 0, PoissonLambda: 1}.Validate())
	require.NoError(t, NoiseConfig{MaskRatio: 1, PoissonLambda: 1}.Validate())
	for _, tc := range []struct {
		c    NoiseConfig
		want string
	}{
		{NoiseConfig{MaskRatio: -0.1, PoissonLambda: 3.5}, "mask ratio -0.1 must be in [0, 1]"},
		{NoiseConfig{MaskRatio: 1.5, PoissonLambda: 3.5}, "mask ratio 1.5 must be in [0, 1]"},
		{NoiseConfig{MaskRatio: math.NaN(), PoissonLambda: 3.5}, "mask ratio NaN must be in [0, 1]"},
		{NoiseConfig{MaskRatio: 0.3}, "Poisson λ 0 must be positive and finite"},
		{NoiseConfig{MaskRatio: 0.3, PoissonLambda: -1}, "Poisson λ -1 must be positive and finite"},
		{NoiseConfig{MaskRatio: 0.3, PoissonLambda: math.Inf(1)}, "Poisson λ +Inf must be positive and finite"},
		{NoiseConfig{MaskRatio: 0.3, PoissonLambda: math.NaN()}, "Poisson λ NaN must be positive and finite"},
		{NoiseConfig{MaskRatio: 0.3, PoissonLambda: 3.5, MaskID: -1}, "mask id -1 is negative"},
		{NoiseConfig{MaskRatio: 0.3, PoissonLambda: 3.5, PermuteSentences: true}, "permuting sentences needs the end-of-sentence ids"},
		{NoiseConfig{MaskRatio: 0.3, PoissonLambda: 3.5, MaskID: 4, EndOfSentence: []int{3, 4}}, "mask id 4 is also an end-of-sentence id"},
	} {
		assert.EqualError(t, tc.c.Validate(), "datasets: noise config: "+tc.want)
	}
}

func TestPositivePoisson(t *testing.T) {
	// The conditional mean of Poisson(λ) given ≥ 1 is λ/(1−e^−λ).
	rng := rand.New(rand.NewPCG(2, 3))
	for _, lambda := range []float64{0.01, 0.5, 3.5, 12, 45} {
		p0 := math.Exp(-lambda)
		sum, sumSq := 0.0, 0.0
		const n = 20000
		for range n {
			k := positivePoisson(rng, lambda, p0)
			require.GreaterOrEqual(t, k, 1)
			sum += float64(k)
			sumSq += float64(k * k)
		}
		mean := sum / n
		want := lambda / -math.Expm1(-lambda)
		sd := math.Sqrt(sumSq/n - mean*mean)
		assert.InDelta(t, want, mean, 5*sd/math.Sqrt(n)+1e-9, "λ = %v", lambda)
	}
}

// mustNoise is Noise for a valid config.
func mustNoise(t *testing.T, ids []int, c NoiseConfig, rng *rand.Rand) []int {
	t.Helper()
	out, err := Noise(ids, c, rng)
	require.NoError(t, err)
	return out
}

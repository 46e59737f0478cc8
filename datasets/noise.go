package datasets

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// NoiseConfig sets the corruption of BART's denoising pretraining (Lewis
// et al. 2019, §2.2): sentence permutation and text infilling. BART's
// setting is MaskRatio 0.3, PoissonLambda 3.5, PermuteSentences true.
type NoiseConfig struct {
	// MaskRatio is the fraction of tokens masked by text infilling, in
	// [0, 1]; 0 turns infilling off.
	MaskRatio float64
	// PoissonLambda is the mean of the Poisson distribution of span
	// lengths, > 0. A span of length 0 inserts a mask token.
	PoissonLambda float64
	// PermuteSentences shuffles the order of the sentences, which end
	// after each run of EndOfSentence ids.
	PermuteSentences bool
	// MaskID is the id of the mask token, ≥ 0.
	MaskID int
	// EndOfSentence are the ids that end a sentence, e.g. those of ".",
	// "!" and "?". Needed by PermuteSentences.
	EndOfSentence []int
}

// Validate reports the first invalid setting of c.
func (c NoiseConfig) Validate() error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("datasets: noise config: "+format, args...)
	}
	switch {
	case !(c.MaskRatio >= 0 && c.MaskRatio <= 1): // also catches NaN
		return fail("mask ratio %v must be in [0, 1]", c.MaskRatio)
	case !(c.PoissonLambda > 0) || math.IsInf(c.PoissonLambda, 1):
		return fail("Poisson λ %v must be positive and finite", c.PoissonLambda)
	case c.MaskID < 0:
		return fail("mask id %d is negative", c.MaskID)
	case c.PermuteSentences && len(c.EndOfSentence) == 0:
		return fail("permuting sentences needs the end-of-sentence ids")
	case slices.Contains(c.EndOfSentence, c.MaskID):
		return fail("mask id %d is also an end-of-sentence id", c.MaskID)
	}
	return nil
}

// Noise returns a corrupted copy of ids, the source of a denoising example
// whose target is ids itself; ids is not modified. Empty ids give an empty
// result.
//
// First, with c.PermuteSentences, the sentences are shuffled: a sentence
// ends after a run of c.EndOfSentence ids, and a trailing piece without
// one counts as a sentence. Then text infilling masks about c.MaskRatio
// of the n tokens: the number to mask is n·MaskRatio rounded up or down at
// random so that its mean is exact. Span lengths are drawn from
// Poisson(c.PoissonLambda) until they cover that number, the last one
// shortened to fit (as fairseq's denoising_dataset.py does). The spans are
// placed at random without overlapping, and each is replaced by a single
// c.MaskID, so a span of k tokens shortens the sequence by k−1; a span of
// length 0 inserts a mask token. Zero-length spans are capped at n+1 (at
// most one per gap on average), which only binds for λ far below 1.
//
// Unlike fairseq, spans never overlap, so exactly the drawn number of
// tokens is masked, and there is no random-token replacement. rng is a
// *rand.Rand from math/rand/v2; the result depends only on ids, c and the
// state of rng. An invalid c is an error (see NoiseConfig.Validate).
func Noise(ids []int, c NoiseConfig, rng *rand.Rand) ([]int, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	seq := slices.Clone(ids)
	if seq == nil {
		seq = []int{}
	}
	if c.PermuteSentences {
		seq = permuteSentences(seq, c.EndOfSentence, rng)
	}
	if c.MaskRatio == 0 || len(seq) == 0 {
		return seq, nil
	}
	return infill(seq, c, rng), nil
}

// permuteSentences returns the sentences of seq in a random order.
func permuteSentences(seq, ends []int, rng *rand.Rand) []int {
	var sentences [][]int
	start := 0
	for i, id := range seq {
		nextEnds := i+1 < len(seq) && slices.Contains(ends, seq[i+1])
		if slices.Contains(ends, id) && !nextEnds {
			sentences = append(sentences, seq[start:i+1])
			start = i + 1
		}
	}
	if start < len(seq) {
		sentences = append(sentences, seq[start:])
	}
	if len(sentences) < 2 {
		return seq
	}
	rng.Shuffle(len(sentences), func(i, j int) { sentences[i], sentences[j] = sentences[j], sentences[i] })
	out := make([]int, 0, len(seq))
	for _, s := range sentences {
		out = append(out, s...)
	}
	return out
}

// infill replaces random spans of seq by single mask tokens.
func infill(seq []int, c NoiseConfig, rng *rand.Rand) []int {
	n := len(seq)
	exact := float64(n) * c.MaskRatio
	budget := int(exact)
	if rng.Float64() < exact-float64(budget) {
		budget++
	}
	// Draw the spans. A run of i.i.d. Poisson draws is a geometric number
	// of zeros (each an insertion) before each positive length, which is
	// how it is drawn here, so that a small λ costs no more than a large
	// one.
	var spans []int // lengths, positive and zero
	inserts := 0
	p0 := math.Exp(-c.PoissonLambda) // P(length 0)
	for budget > 0 {
		if z := geometricCount(rng, c.PoissonLambda, n+1-inserts); z > 0 {
			inserts += z
			for range z {
				spans = append(spans, 0)
			}
		}
		k := min(positivePoisson(rng, c.PoissonLambda, p0), budget)
		spans = append(spans, k)
		budget -= k
	}
	if len(spans) == 0 {
		return seq
	}
	masked := 0
	for _, k := range spans {
		masked += k
	}
	// Lay out n−masked kept tokens and len(spans) spans in a uniformly
	// random order: choose which of the slots hold spans (selection
	// sampling), and the order of the spans by a shuffle.
	rng.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
	slots := n - masked + len(spans)
	out := make([]int, 0, n-masked+len(spans))
	left, at, next := len(spans), 0, 0
	for s := range slots {
		if rng.IntN(slots-s) < left {
			out = append(out, c.MaskID)
			at += spans[next]
			next++
			left--
			continue
		}
		out = append(out, seq[at])
		at++
	}
	return out
}

// geometricCount returns the number of zero draws of Poisson(λ) before
// the first positive one, at most limit: P(≥ z) = e^(−λz).
func geometricCount(rng *rand.Rand, lambda float64, limit int) int {
	if limit <= 0 {
		return 0
	}
	u := 1 - rng.Float64() // in (0, 1]
	z := math.Floor(-math.Log(u) / lambda)
	if z >= float64(limit) {
		return limit
	}
	return int(z)
}

// positivePoisson draws from Poisson(λ) conditioned on being positive;
// p0 is e^(−λ).
func positivePoisson(rng *rand.Rand, lambda, p0 float64) int {
	if lambda > 30 {
		// P(0) < 1e-13: draw unconditioned, as sums of Poisson(≤ 30)
		// variates by Knuth's product method, and redraw the rare 0.
		for {
			k := 0
			for rest := lambda; rest > 0; rest -= 30 {
				limit := math.Exp(-min(rest, 30))
				for prod := rng.Float64(); prod > limit; prod *= rng.Float64() {
					k++
				}
			}
			if k > 0 {
				return k
			}
		}
	}
	// Inversion over k = 1, 2, …: P(k | k ≥ 1) = p0·λ^k / k! / (1 − p0).
	u := rng.Float64() * -math.Expm1(-lambda)
	k, pk := 1, p0*lambda
	for cum := pk; u >= cum && pk > 0; cum += pk {
		k++
		pk *= lambda / float64(k)
	}
	return k
}

package finetune

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chrF2 is 100·5·P·R/(4·P + R), the F-score with β = 2 of average
// precision P and recall R.
func chrF2(p, r float64) float64 { return 100 * 5 * p * r / (4*p + r) }

func TestCorpusChrFHandComputed(t *testing.T) {
	const tol = 1e-9
	// Statistics are written per order n as hyp/ref/match n-gram counts,
	// after whitespace is removed. Orders with no hypothesis or no reference
	// n-gram (in the corpus totals) are left out of the averages.
	for _, tc := range []struct {
		name       string
		hyps, refs []string
		want       float64
	}{{
		// n=1 2/2/2, n=2 1/1/1, n≥3 none: P = R = 1.
		name: "identical",
		hyps: []string{"ab"},
		refs: []string{"ab"},
		want: 100,
	}, {
		// "abc" both sides once whitespace is gone: 3/3/3, 2/2/2, 1/1/1.
		name: "whitespace removed",
		hyps: []string{"a b c", "ab c"},
		refs: []string{"abc", "a\tbc"},
		want: 100,
	}, {
		// "abc" vs "abd": n=1 3/3/2 (a b), n=2 2/2/1 (ab), n=3 1/1/0.
		// P = R = (2/3 + 1/2 + 0)/3 = 7/18, so F = 7/18.
		name: "one character wrong",
		hyps: []string{"ab c"},
		refs: []string{"abd"},
		want: 100 * 7.0 / 18,
	}, {
		// "ab" vs "abc": n=1 2/3/2, n=2 1/2/1, n=3 0/1/0 (no hypothesis
		// 3-gram: left out). P = (1 + 1)/2 = 1, R = (2/3 + 1/2)/2 = 7/12,
		// F = 5·(7/12)/(4 + 7/12) = 35/55 = 7/11: recall weighs more.
		name: "short hypothesis",
		hyps: []string{"ab"},
		refs: []string{"abc"},
		want: 100 * 7.0 / 11,
	}, {
		// Segments "ab"/"abc" (2/3/2, 1/2/1, 0/1/0) and "abc"/"abd"
		// (3/3/2, 2/2/1, 1/1/0) summed: n=1 5/6/4, n=2 3/4/2, n=3 1/2/0.
		// P = (4/5 + 2/3 + 0)/3 = 22/45, R = (4/6 + 2/4 + 0)/3 = 7/18;
		// F = 40.55, not the mean of the segment scores (63.64 + 38.89)/2.
		name: "statistics summed over the corpus",
		hyps: []string{"ab", "abc"},
		refs: []string{"abc", "abd"},
		want: chrF2(22.0/45, 7.0/18),
	}, {
		// Segment 1 "abc"/"ab": n=1 3/2/2, n=2 2/1/1, and n=3: the
		// reference has no 3-gram, so the hypothesis's "abc" is not
		// counted either (sacreBLEU 2.x): 0/0/0. Segment 2 "xyz"/"xyz":
		// 3/3/3, 2/2/2, 1/1/1. Sum: 6/5/5, 4/3/3, 1/1/1.
		// P = (5/6 + 3/4 + 1)/3 = 31/36, R = 1, F = 155/160 = 96.875.
		// (Counting "abc" would give n=3 2/1/1 and 125/136 = 91.9.)
		name: "reference shorter than n",
		hyps: []string{"abc", "xyz"},
		refs: []string{"ab", "xyz"},
		want: 96.875,
	}, {
		// No hypothesis n-gram at all: no effective order → 0.
		name: "only an empty hypothesis",
		hyps: []string{""},
		refs: []string{"abc"},
		want: 0,
	}, {
		// "" / "abc" adds 0/3/0, 0/2/0, 0/1/0; "abc" / "abc" 3/3/3, 2/2/2,
		// 1/1/1. Sum 3/6/3, 2/4/2, 1/2/1: P = 1, R = 1/2,
		// F = 5·0.5/(4 + 0.5) = 5/9.
		name: "an empty hypothesis in the corpus",
		hyps: []string{"", "abc"},
		refs: []string{"abc", "abc"},
		want: 100 * 5.0 / 9,
	}, {
		// n=1 2/2/0: P = R = 0 → 0.
		name: "nothing matches",
		hyps: []string{"ab"},
		refs: []string{"cd"},
		want: 0,
	}, {
		// Code points, no normalization: "ü" (U+00FC) vs "u"+U+0308.
		// hyp "Zü" 2 code points, ref "Zü" 3: n=1 2/3/1 (Z), n=2 1/2/0,
		// n=3 0/1/0 (left out). P = (1/2 + 0)/2 = 1/4, R = (1/3 + 0)/2 = 1/6.
		name: "no unicode normalization",
		hyps: []string{"Z\u00fc"},
		refs: []string{"Zu\u0308"},
		want: chrF2(1.0/4, 1.0/6),
	}, {
		// Case-sensitive: "Ab" vs "ab": n=1 2/2/1 (b), n=2 1/1/0.
		// P = R = (1/2 + 0)/2 = 1/4.
		name: "case sensitive",
		hyps: []string{"Ab"},
		refs: []string{"ab"},
		want: 25,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CorpusChrF(tc.hyps, tc.refs)
			require.NoError(t, err)
			assert.InDelta(t, tc.want, got.Score, tol)
		})
	}
}

func TestCorpusChrFPublished(t *testing.T) {
	for _, tc := range []struct {
		name       string
		hyps, refs []string
		want, tol  float64
	}{{
		// Hugging Face evaluate's "chrf" metric card (it calls sacreBLEU's
		// CHRF with char_order 6, word_order 0, beta 2), example 1.
		name: "evaluate chrf, two segments",
		hyps: []string{"The relationship between cats and dogs is not exactly friendly.",
			"a good bookshop is just a genteel black hole that knows how to read."},
		refs: []string{"The relationship between dogs and cats is not exactly friendly.",
			"A good bookshop is just a genteel Black Hole that knows how to read."},
		want: 84.64214891738334, tol: 1e-9,
	}, {
		// The same card's single-sentence example.
		name: "evaluate chrf, one segment",
		hyps: []string{"The relationship between Obama and Netanyahu is not exactly friendly."},
		refs: []string{"The ties between Obama and Netanyahu are not particularly friendly."},
		want: 61.576379378113785, tol: 1e-9,
	},
		// sacreBLEU's test/test_chrf.py, test_cases_effective_order (run
		// there with beta 3, but precision equals recall in each, so the
		// score does not depend on beta); EPSILON 1e-4 there.
		{name: "sacreBLEU a/a", hyps: []string{"a"}, refs: []string{"a"}, want: 100, tol: 1e-4},
		{name: "sacreBLEU empty/reference", hyps: []string{""}, refs: []string{"reference"}, want: 0, tol: 1e-4},
		{name: "sacreBLEU a b c/a b c", hyps: []string{"a b c"}, refs: []string{"a b c"}, want: 100, tol: 1e-4},
		{name: "sacreBLEU a b c/abc", hyps: []string{"a b c"}, refs: []string{"abc"}, want: 100, tol: 1e-4},
		{name: "sacreBLEU empty/c", hyps: []string{""}, refs: []string{"c"}, want: 0, tol: 1e-4},
		{name: "sacreBLEU a,b/a,c", hyps: []string{"a", "b"}, refs: []string{"a", "c"}, want: 50, tol: 1e-4},
		{name: "sacreBLEU aa/ab", hyps: []string{"aa"}, refs: []string{"ab"}, want: 25, tol: 1e-4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CorpusChrF(tc.hyps, tc.refs)
			require.NoError(t, err)
			assert.InDelta(t, tc.want, got.Score, tc.tol)
		})
	}
}

func TestCorpusChrFGolden(t *testing.T) {
	const tol = 1e-9
	g := loadTranslationGolden(t)
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			got, err := CorpusChrF(c.Hyps, c.Refs)
			require.NoError(t, err)
			assert.InDelta(t, c.ChrFPort, got.Score, tol, "vs the sacreBLEU 2.x chrF port")
		})
	}
}

func TestCorpusChrFErrors(t *testing.T) {
	for _, tc := range translationErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CorpusChrF(tc.hyps, tc.refs)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.sentinel)
			assert.ErrorContains(t, err, "finetune: chrf: ")
			assert.ErrorContains(t, err, tc.contains)
			assert.Equal(t, strings.ToLower(err.Error()[:1]), err.Error()[:1], "lowercase")
			assert.Equal(t, ChrF{}, got)
		})
	}
}

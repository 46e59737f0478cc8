package finetune

import "strings"

// This file follows sacreBLEU 2.x's chrF (github.com/mjpost/sacrebleu,
// sacrebleu/metrics/chrf.py: CHRF with its defaults char_order=6,
// word_order=0, beta=2, lowercase=False, whitespace=False,
// eps_smoothing=False, and sacrebleu/metrics/helpers.py:
// extract_all_char_ngrams), which is Popović (2015), "chrF: character
// n-gram F-score for automatic MT evaluation", WMT. The Go code is written
// from those descriptions, not copied.

const (
	// chrFOrder is the largest character n-gram order of chrF.
	chrFOrder = 6
	// chrFBeta weighs recall beta times as much as precision (chrF2).
	chrFBeta = 2
)

// ChrF is a corpus chrF score (Popović 2015) as sacreBLEU computes it by
// default: chrF2, character n-grams up to 6, whitespace removed.
type ChrF struct {
	// Score is the chrF score, 0–100.
	Score float64
}

// CorpusChrF scores hyps against one reference each: refs[i] is the
// reference of hyps[i]. As sacreBLEU 2.x's CHRF().corpus_score:
//
//   - each segment loses all its whitespace (Python's str.split), and its
//     character (code point) n-grams, n = 1..6, are counted, without
//     lowercasing or Unicode normalization;
//   - per segment and order n: the hypothesis's n-grams, the reference's
//     n-grams and their clipped matches; where the reference has no n-gram
//     of order n, the hypothesis's are not counted either;
//   - these statistics are summed over the corpus (not averaged over
//     segments); then precision and recall of each order with both a
//     hypothesis and a reference n-gram are averaged (the orders without are
//     left out: sacreBLEU's "effective order", eps_smoothing=False), and the
//     score is 100·(1+β²)·P·R/(β²·P+R) with β = 2, or 0 when P+R = 0.
//
// Different lengths, an empty corpus, invalid UTF-8 and an empty reference
// string are errors, as for CorpusBLEU.
func CorpusChrF(hyps, refs []string) (ChrF, error) {
	if err := checkTranslationCorpus("chrf", hyps, refs); err != nil {
		return ChrF{}, err
	}
	// stats[n-1] = hypothesis n-grams, reference n-grams, matches.
	var stats [chrFOrder][3]int
	for i := range hyps {
		h := []rune(strings.Join(strings.FieldsFunc(hyps[i], isPySpace), ""))
		r := []rune(strings.Join(strings.FieldsFunc(refs[i], isPySpace), ""))
		for n := 1; n <= chrFOrder; n++ {
			refCounts := charNgrams(r, n)
			if len(refCounts) == 0 {
				continue // no reference n-gram: nothing counts at this order
			}
			hypCounts := charNgrams(h, n)
			for g, c := range hypCounts {
				stats[n-1][0] += c
				stats[n-1][2] += min(c, refCounts[g])
			}
			stats[n-1][1] += len(r) - n + 1
		}
	}

	var prec, rec float64
	effective := 0
	for _, s := range stats {
		hyp, ref, match := s[0], s[1], s[2]
		if hyp > 0 && ref > 0 {
			prec += float64(match) / float64(hyp)
			rec += float64(match) / float64(ref)
			effective++
		}
	}
	if effective == 0 {
		return ChrF{}, nil
	}
	prec /= float64(effective)
	rec /= float64(effective)
	if prec+rec == 0 {
		return ChrF{}, nil
	}
	const b2 = chrFBeta * chrFBeta
	f := (1 + b2) * prec * rec
	f /= b2*prec + rec
	return ChrF{Score: 100 * f}, nil
}

// charNgrams counts the n-grams of the code points s.
func charNgrams(s []rune, n int) map[string]int {
	counts := make(map[string]int, max(len(s)-n+1, 0))
	for i := 0; i+n <= len(s); i++ {
		counts[string(s[i:i+n])]++
	}
	return counts
}

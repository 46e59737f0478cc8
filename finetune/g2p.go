package finetune

import (
	"errors"
	"fmt"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
)

// This file scores grapheme-to-phoneme conversion (G2P) the way the
// CMUdict literature does (Yao & Zweig 2015, "Sequence-to-sequence neural
// net models for grapheme-to-phoneme conversion", Interspeech; Yolchuyeva,
// Németh & Gyires-Tóth 2019, "Transformer based grapheme-to-phoneme
// conversion", Interspeech): a word may have several reference
// pronunciations, and a hypothesis is compared with all of them. The word
// error rate counts a word wrong only when the hypothesis equals none of
// them, as cmusphinx/g2p-seq2seq's evaluate does ("hyp not in
// pronunciations"); the phoneme error rate measures the hypothesis against
// the reference closest to it in edit distance, and sums edits and
// reference lengths over the test set before dividing, as Phonetisaurus's
// error-rate script keeps running totals of reference symbols and edits.

// G2PWord is one test word with every pronunciation the data gives it:
// Source is the spelling as the model reads it (the TSV's left column,
// e.g. "c a t") and References its pronunciations as phoneme tokens
// (e.g. [["K", "AE", "T"]]), in the order of the data, each once.
type G2PWord struct {
	Source     string
	References [][]string
}

// GroupG2P groups source<TAB>target pairs by source: one G2PWord per
// distinct source, in order of first appearance, with the targets split
// at white space (strings.Fields) into phoneme tokens. A target that
// repeats an earlier one of the same source is left out. An empty source
// or a target with no token is an error naming the pair.
func GroupG2P(pairs []datasets.Pair) ([]G2PWord, error) {
	var words []G2PWord
	index := make(map[string]int)
	seen := make(map[[2]string]bool)
	for i, p := range pairs {
		if strings.TrimSpace(p.Src) == "" {
			return nil, fmt.Errorf("finetune: g2p: pair %d: empty source", i)
		}
		ref := strings.Fields(p.Tgt)
		if len(ref) == 0 {
			return nil, fmt.Errorf("finetune: g2p: pair %d (%q): %w", i, p.Src, errEmptyReference)
		}
		key := [2]string{p.Src, strings.Join(ref, " ")}
		if seen[key] {
			continue
		}
		seen[key] = true
		j, ok := index[p.Src]
		if !ok {
			j = len(words)
			index[p.Src] = j
			words = append(words, G2PWord{Source: p.Src})
		}
		words[j].References = append(words[j].References, ref)
	}
	return words, nil
}

// G2PScore holds the counts behind the G2P error rates.
type G2PScore struct {
	// Words is the number of words scored.
	Words int
	// WordErrors is the number of words whose hypothesis equals none of
	// their references.
	WordErrors int
	// Edits is the sum over words of the edit distance (EditDistance)
	// from the hypothesis to its closest reference.
	Edits int
	// RefPhonemes is the sum over words of the length of that closest
	// reference; among references at the same distance, the first in the
	// order given.
	RefPhonemes int
}

// WER is the word error rate, WordErrors / Words, in [0, 1].
func (s G2PScore) WER() float64 { return ratio(s.WordErrors, s.Words) }

// PER is the phoneme error rate, Edits / RefPhonemes: it may exceed 1
// when hypotheses are much longer than their references.
func (s G2PScore) PER() float64 { return ratio(s.Edits, s.RefPhonemes) }

// String writes both rates in percent with the counts they come from.
func (s G2PScore) String() string {
	return fmt.Sprintf("WER %.2f%% (%d of %d words), PER %.2f%% (%d edits over %d reference phonemes)",
		100*s.WER(), s.WordErrors, s.Words, 100*s.PER(), s.Edits, s.RefPhonemes)
}

// ScoreG2P scores hyps[i], the phoneme tokens produced for word i, against
// refs[i], that word's reference pronunciations:
//
//	WER = #{i : hyps[i] ≠ r for every r in refs[i]} / N
//	PER = Σ_i d(hyps[i], r_i) / Σ_i |r_i|,  r_i = argmin_{r in refs[i]} d(hyps[i], r)
//
// where d is EditDistance and ties for r_i go to the earliest reference.
// PER is thus the total of edits over the total length of the references
// used (not a mean of per-word rates, which would weigh short words
// more). An empty hypothesis is allowed (its distance is the reference's
// length). Different lengths, no words, a word without references or an
// empty reference are errors.
func ScoreG2P(hyps [][]string, refs [][][]string) (G2PScore, error) {
	var s G2PScore
	if len(hyps) != len(refs) {
		return s, fmt.Errorf("finetune: g2p: %w: %d hypotheses, %d words with references", errCorpusLength, len(hyps), len(refs))
	}
	if len(hyps) == 0 {
		return s, fmt.Errorf("finetune: g2p: %w", errCorpusEmpty)
	}
	for i, h := range hyps {
		if len(refs[i]) == 0 {
			return G2PScore{}, fmt.Errorf("finetune: g2p: word %d: %w", i, errNoReferences)
		}
		best, bestLen, exact := -1, 0, false
		for j, r := range refs[i] {
			if len(r) == 0 {
				return G2PScore{}, fmt.Errorf("finetune: g2p: word %d: reference %d: %w", i, j, errEmptyReference)
			}
			d := EditDistance(h, r)
			exact = exact || d == 0
			if best < 0 || d < best {
				best, bestLen = d, len(r)
			}
		}
		s.Words++
		if !exact {
			s.WordErrors++
		}
		s.Edits += best
		s.RefPhonemes += bestLen
	}
	return s, nil
}

// errNoReferences is ScoreG2P's error for a word given no reference.
var errNoReferences = errors.New("no reference pronunciation")

// WER is ScoreG2P's word error rate: the fraction of words whose
// hypothesis equals none of their references.
func WER(hyps [][]string, refs [][][]string) (float64, error) {
	s, err := ScoreG2P(hyps, refs)
	return s.WER(), err
}

// PER is ScoreG2P's phoneme error rate: the summed edit distances to each
// word's closest reference over the summed lengths of those references.
func PER(hyps [][]string, refs [][][]string) (float64, error) {
	s, err := ScoreG2P(hyps, refs)
	return s.PER(), err
}

// ScoreG2PWords scores decoded texts against grouped words: hyps[i] is the
// model's output for words[i].Source, split at white space into phoneme
// tokens.
func ScoreG2PWords(hyps []string, words []G2PWord) (G2PScore, error) {
	if len(hyps) != len(words) {
		return G2PScore{}, fmt.Errorf("finetune: g2p: %w: %d hypotheses, %d words", errCorpusLength, len(hyps), len(words))
	}
	toks := make([][]string, len(hyps))
	refs := make([][][]string, len(words))
	for i := range hyps {
		toks[i] = strings.Fields(hyps[i])
		refs[i] = words[i].References
	}
	return ScoreG2P(toks, refs)
}

// EditDistance is the Levenshtein distance between two token sequences:
// the least number of insertions, deletions and substitutions of one
// token that turn a into b, each costing 1 (Wagner & Fischer 1974's
// dynamic programme, one row at a time: O(len(a)·len(b)) time,
// O(len(b)) memory).
func EditDistance(a, b []string) int {
	row := make([]int, len(b)+1) // row[j] = distance from a[:i] to b[:j]
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		diag := row[0] // distance from a[:i-1] to b[:j-1]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			sub := diag
			if a[i-1] != b[j-1] {
				sub++
			}
			diag = row[j]
			row[j] = min(sub, row[j]+1, row[j-1]+1)
		}
	}
	return row[len(b)]
}

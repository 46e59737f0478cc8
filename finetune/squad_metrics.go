package finetune

import (
	"strings"
	"unicode"
)

// The SQuAD v1.1 metrics, as the official evaluate-v1.1.py computes them
// (Rajpurkar et al. 2016, https://rajpurkar.github.io/SQuAD-explorer/):
// both texts are normalised (NormalizeAnswer), exact match is their
// equality, and F1 is over their whitespace tokens counted as multisets;
// an example scores its best over the ground truths, and the totals are
// means ×100.

// squadPunct is Python's string.punctuation, the set evaluate-v1.1.py
// removes.
const squadPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// NormalizeAnswer is evaluate-v1.1.py's normalize_answer: lower case,
// remove the characters of string.punctuation, remove the articles a, an
// and the where they are whole words (Python's \b with Unicode \w), and
// collapse whitespace to single spaces. Go's lower case is the simple
// per-character mapping (Python lowers İ to two characters; nothing else
// differs).
func NormalizeAnswer(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if r < 128 && strings.ContainsRune(squadPunct, r) {
			return -1
		}
		return r
	}, s)
	// remove_articles: re.sub(r'\b(a|an|the)\b', ' ', text) replaces a
	// maximal run of word characters that is exactly an article.
	var b strings.Builder
	rs := []rune(s)
	for i := 0; i < len(rs); {
		if !isPyWord(rs[i]) {
			b.WriteRune(rs[i])
			i++
			continue
		}
		j := i
		for j < len(rs) && isPyWord(rs[j]) {
			j++
		}
		switch w := string(rs[i:j]); w {
		case "a", "an", "the":
			b.WriteByte(' ')
		default:
			b.WriteString(w)
		}
		i = j
	}
	return strings.Join(strings.FieldsFunc(b.String(), isPySpace), " ")
}

// isPyWord is Python's Unicode \w: str.isalnum() or '_'.
func isPyWord(r rune) bool {
	return r == '_' || unicode.In(r, unicode.L, unicode.Nd, unicode.Nl, unicode.No)
}

// SquadExactMatch is evaluate-v1.1.py's exact_match_score: whether the
// normalised texts are equal.
func SquadExactMatch(prediction, truth string) bool {
	return NormalizeAnswer(prediction) == NormalizeAnswer(truth)
}

// SquadF1 is evaluate-v1.1.py's f1_score: the harmonic mean of the
// precision and recall of the prediction's normalised tokens against the
// truth's, counted with multiplicity (Counter intersection); 0 when they
// share no token (so 0 when either is empty after normalisation).
func SquadF1(prediction, truth string) float64 {
	p := strings.Fields(NormalizeAnswer(prediction))
	g := strings.Fields(NormalizeAnswer(truth))
	count := map[string]int{}
	for _, w := range g {
		count[w]++
	}
	same := 0
	for _, w := range p {
		if count[w] > 0 {
			count[w]--
			same++
		}
	}
	if same == 0 {
		return 0
	}
	precision := float64(same) / float64(len(p))
	recall := float64(same) / float64(len(g))
	return 2 * precision * recall / (precision + recall)
}

// SquadScores are a prediction set's SQuAD v1.1 totals, in percent.
type SquadScores struct {
	ExactMatch float64 `json:"exact_match"`
	F1         float64 `json:"f1"`
	N          int     `json:"n"` // questions scored
}

// SquadEvaluate is evaluate-v1.1.py's evaluate: for each question, the
// best exact match and F1 of its prediction over its ground truths, then
// the means ×100. A question without a prediction scores 0, as the
// official script's "Unanswered question … will receive score 0".
// truths maps a question id to its answers; predictions maps it to the
// predicted text.
func SquadEvaluate(truths map[string][]string, predictions map[string]string) SquadScores {
	var s SquadScores
	for id, ts := range truths {
		s.N++
		p, ok := predictions[id]
		if !ok {
			continue
		}
		em, f1 := 0.0, 0.0
		for _, t := range ts {
			if SquadExactMatch(p, t) {
				em = 1
			}
			f1 = max(f1, SquadF1(p, t))
		}
		s.ExactMatch += em
		s.F1 += f1
	}
	if s.N > 0 {
		s.ExactMatch *= 100 / float64(s.N)
		s.F1 *= 100 / float64(s.N)
	}
	return s
}

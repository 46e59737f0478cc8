package finetune

import (
	"fmt"
	"math"
	"testing"
)

// The expected values are hand-computed and were checked against the
// official evaluate-v1.1.py functions (normalize_answer, f1_score) run on
// the same strings.
func TestSquadMetrics(t *testing.T) {
	cases := []struct {
		pred, truth, norm string
		em                bool
		f1                float64
	}{
		{"The Cat!", "cat", "cat", true, 1},                      // lower, punctuation, article
		{"a  dog  ran", "dog ran", "dog ran", true, 1},           // article, whitespace
		{"the the cat sat", "cat sat on", "cat sat", false, 0.8}, // p=2/2, r=2/3: 2·1·(2/3)/(5/3)
		{"Theater", "theater", "theater", true, 1},               // "the" only as a whole word
		{"an apple a day", "apple day", "apple day", true, 1},
		{"", "cat", "", false, 0},
		{"x-ray", "xray", "xray", true, 1},                        // punctuation removed, not spaced
		{"them", "the m", "them", false, 0},                       // "the m" → "m"
		{"cat cat", "cat", "cat cat", false, 2.0 / 3},             // Counter: 1 shared; p=1/2, r=1
		{"Ünïcode café", "ünïcode café", "ünïcode café", true, 1}, // Unicode lower case
		{"a", "", "", true, 0},                                    // both empty: EM 1, F1 0
		{"A.N.", "an", "", true, 0},                               // "A.N." → "an" → article
		{"l'été", "lété", "lété", true, 1},                        // ' is punctuation
		{"the_cat", "the cat", "thecat", false, 0},                // _ is in string.punctuation
	}
	for _, c := range cases {
		if got := NormalizeAnswer(c.pred); got != c.norm {
			t.Errorf("NormalizeAnswer(%q) = %q, want %q", c.pred, got, c.norm)
		}
		if got := SquadExactMatch(c.pred, c.truth); got != c.em {
			t.Errorf("SquadExactMatch(%q, %q) = %v, want %v", c.pred, c.truth, got, c.em)
		}
		if got := SquadF1(c.pred, c.truth); math.Abs(got-c.f1) > 1e-12 {
			t.Errorf("SquadF1(%q, %q) = %v, want %v", c.pred, c.truth, got, c.f1)
		}
	}
}

func TestSquadEvaluate(t *testing.T) {
	truths := map[string][]string{
		"q1": {"the cat", "a dog"},   // best over truths: "dog" matches the second
		"q2": {"red apple tree"},     // "apple" F1: p=1, r=1/3 → 0.5
		"q3": {"missing prediction"}, // unanswered: 0
	}
	preds := map[string]string{"q1": "Dog.", "q2": "apple", "extra": "ignored"}
	got := SquadEvaluate(truths, preds)
	want := SquadScores{ExactMatch: 100.0 / 3, F1: 100 * 1.5 / 3, N: 3}
	if got.N != want.N || math.Abs(got.ExactMatch-want.ExactMatch) > 1e-9 || math.Abs(got.F1-want.F1) > 1e-9 {
		t.Errorf("SquadEvaluate = %+v, want %+v", got, want)
	}
	if z := SquadEvaluate(nil, nil); z != (SquadScores{}) {
		t.Errorf("empty SquadEvaluate = %+v", z)
	}
}

// SQuAD v1.1 scoring: normalisation drops case, punctuation and articles;
// F1 counts shared tokens.
func ExampleSquadEvaluate() {
	truths := map[string][]string{"q1": {"the Eiffel Tower"}, "q2": {"in 1889"}}
	preds := map[string]string{"q1": "Eiffel tower.", "q2": "1889"}
	s := SquadEvaluate(truths, preds)
	fmt.Printf("EM %.1f, F1 %.1f over %d questions\n", s.ExactMatch, s.F1, s.N)
	// Output: EM 50.0, F1 83.3 over 2 questions
}

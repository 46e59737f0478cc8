package finetune

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// seqeval's README example (https://github.com/chakki-works/seqeval):
// precision, recall and F1 0.50, accuracy 0.80.
var (
	readmeTrue = [][]string{{"O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"}, {"B-PER", "I-PER", "O"}}
	readmePred = [][]string{{"O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"}, {"B-PER", "I-PER", "O"}}
)

func TestEntities(t *testing.T) {
	cases := []struct {
		name string
		in   [][]string
		want []Entity
	}{
		{"bio", [][]string{{"B-PER", "I-PER", "O", "B-LOC"}}, []Entity{{"PER", 0, 2}, {"LOC", 3, 4}}},
		{"I after O starts a chunk (IOB1, lenient)", [][]string{{"O", "I-PER", "I-PER", "O"}}, []Entity{{"PER", 1, 3}}},
		{"B after B", [][]string{{"B-PER", "B-PER"}}, []Entity{{"PER", 0, 1}, {"PER", 1, 2}}},
		{"type change inside", [][]string{{"B-PER", "I-LOC"}}, []Entity{{"PER", 0, 1}, {"LOC", 1, 2}}},
		{"no chunk crosses sentences", [][]string{{"B-PER"}, {"I-PER"}}, []Entity{{"PER", 0, 1}, {"PER", 2, 3}}},
		{"iobes", [][]string{{"S-PER", "B-LOC", "E-LOC"}}, []Entity{{"PER", 0, 1}, {"LOC", 1, 3}}},
		{"all O", [][]string{{"O", "O"}}, nil},
		{"readme truth", readmeTrue, []Entity{{"MISC", 3, 6}, {"PER", 8, 10}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, Entities(c.in))
		})
	}
}

func TestSeqEval(t *testing.T) {
	cases := []struct {
		name        string
		truth, pred [][]string
		p, r, f1    float64
		acc         float64
	}{
		{"seqeval README", readmeTrue, readmePred, 0.5, 0.5, 0.5, 0.8},
		{"perfect", readmeTrue, readmeTrue, 1, 1, 1, 1},
		// Nothing predicted: precision 0 (seqeval's zero_division 0).
		{"all O predicted", [][]string{{"B-PER", "O"}}, [][]string{{"O", "O"}}, 0, 0, 0, 0.5},
		// True A[0,1) B[2,4); predicted A[0,1) B[1,2) B[2,4): 2 of 3 right,
		// P 2/3, R 2/2, F1 2·(2/3)/(5/3) = 0.8; 3 of 4 tags right.
		{"hand count", [][]string{{"B-A", "O", "B-B", "I-B"}}, [][]string{{"B-A", "B-B", "B-B", "I-B"}}, 2.0 / 3, 1, 0.8, 0.75},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := SeqEval(c.truth, c.pred)
			require.NoError(t, err)
			require.InDelta(t, c.p, s.Precision(), 1e-12)
			require.InDelta(t, c.r, s.Recall(), 1e-12)
			require.InDelta(t, c.f1, s.F1(), 1e-12)
			acc, err := TokenAccuracy(c.truth, c.pred)
			require.NoError(t, err)
			require.InDelta(t, c.acc, acc, 1e-12)
			require.Contains(t, s.String(), "micro avg")
		})
	}
	_, err := SeqEval([][]string{{"O"}}, [][]string{{"O", "O"}})
	require.ErrorContains(t, err, "sentence 1 has 1 true tags, 2 predicted")
	_, err = TokenAccuracy([][]string{{"O"}}, nil)
	require.ErrorContains(t, err, "1 true sentences, 0 predicted")
}

func TestIsBIO(t *testing.T) {
	for _, c := range []struct {
		tags []string
		want bool
	}{
		{[]string{"O", "B-PER", "I-PER"}, true},
		{[]string{"O"}, false},
		{[]string{"nn", "vbd", "at"}, false},
		{[]string{"O", "B-PER", "nn"}, false},
		{[]string{"B-"}, false},
	} {
		require.Equal(t, c.want, IsBIO(c.tags), "%v", c.tags)
	}
}

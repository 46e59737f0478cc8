package finetune

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scores is what a metrics case expects, per class: precision, recall, F1
// and support.
type scores struct {
	p, r, f1 float64
	support  int
}

func TestMetricsHandComputed(t *testing.T) {
	const tol = 1e-12
	for _, tc := range []struct {
		name        string
		labels      []string
		truth, pred []int
		counts      [][]int
		accuracy    float64
		macroF1     float64
		perClass    []scores
	}{{
		// scikit-learn's f1_score docstring example: f1_score(y_true, y_pred,
		// average="macro") = 0.26666666666666666, average=None gives
		// [0.8, 0, 0], accuracy_score = 0.3333333333333333.
		//   class 0: tp 2, fp 1 (a true 1), fn 0: P 2/3, R 1, F1 2·2/(2·2+1+0) = 0.8
		//   class 1: tp 0, fp 2, fn 2: 0
		//   class 2: tp 0, fp 1, fn 2: 0
		// macro = (0.8 + 0 + 0)/3 = 0.2666…; accuracy = 2 right of 6 = 1/3.
		name:   "scikit-learn example",
		labels: []string{"0", "1", "2"},
		truth:  []int{0, 1, 2, 0, 1, 2},
		pred:   []int{0, 2, 1, 0, 0, 1},
		counts: [][]int{
			{2, 0, 0},
			{1, 0, 1},
			{0, 2, 0},
		},
		accuracy: 1.0 / 3,
		macroF1:  0.8 / 3,
		perClass: []scores{{2.0 / 3, 1, 0.8, 2}, {0, 0, 0, 2}, {0, 0, 0, 2}},
	}, {
		// c is never predicted: tp 0, fp 0, fn 1, so P = 0/0 → 0, R 0, F1 0,
		// and it counts in the mean (it is in the truth).
		//   a: tp 2, fp 1 (a b), fn 0: P 2/3, R 1, F1 4/5 = 0.8
		//   b: tp 1, fp 1 (the c), fn 1: P 1/2, R 1/2, F1 2/4 = 0.5
		// macro = (0.8 + 0.5 + 0)/3 = 1.3/3; accuracy 3/5.
		name:     "class never predicted",
		labels:   []string{"a", "b", "c"},
		truth:    []int{0, 0, 1, 1, 2},
		pred:     []int{0, 0, 0, 1, 1},
		counts:   [][]int{{2, 0, 0}, {1, 1, 0}, {0, 1, 0}},
		accuracy: 3.0 / 5,
		macroF1:  1.3 / 3,
		perClass: []scores{{2.0 / 3, 1, 0.8, 2}, {0.5, 0.5, 0.5, 2}, {0, 0, 0, 1}},
	}, {
		// c is predicted once but never true: tp 0, fp 1, fn 0, so R = 0/0 → 0,
		// F1 = 0/(0+1+0) = 0, and it counts in the mean (it was predicted).
		//   a: tp 1, fp 0, fn 1 (the c): P 1, R 1/2, F1 2/3
		//   b: tp 2, fp 0, fn 0: F1 1
		// macro = (2/3 + 1 + 0)/3 = 5/9; accuracy 3/4.
		name:     "class predicted but absent from the truth",
		labels:   []string{"a", "b", "c"},
		truth:    []int{0, 0, 1, 1},
		pred:     []int{0, 2, 1, 1},
		counts:   [][]int{{1, 0, 1}, {0, 2, 0}, {0, 0, 0}},
		accuracy: 3.0 / 4,
		macroF1:  5.0 / 9,
		perClass: []scores{{1, 0.5, 2.0 / 3, 2}, {1, 1, 1, 2}, {0, 0, 0, 0}},
	}, {
		// c is neither true nor predicted: left out of the mean, so a perfect
		// run scores 1 (with c counted as 0 it would be 2/3).
		name:     "class absent everywhere",
		labels:   []string{"a", "b", "c"},
		truth:    []int{0, 1, 1},
		pred:     []int{0, 1, 1},
		counts:   [][]int{{1, 0, 0}, {0, 2, 0}, {0, 0, 0}},
		accuracy: 1,
		macroF1:  1,
		perClass: []scores{{1, 1, 1, 1}, {1, 1, 1, 2}, {0, 0, 0, 0}},
	}, {
		name:     "perfect",
		labels:   []string{"neg", "pos"},
		truth:    []int{1, 0, 1, 1},
		pred:     []int{1, 0, 1, 1},
		counts:   [][]int{{1, 0}, {0, 3}},
		accuracy: 1,
		macroF1:  1,
		perClass: []scores{{1, 1, 1, 1}, {1, 1, 1, 3}},
	}, {
		// Every prediction wrong: tp 0 for both classes, so P = R = F1 = 0.
		name:     "all wrong",
		labels:   []string{"neg", "pos"},
		truth:    []int{0, 0, 1, 1, 1},
		pred:     []int{1, 1, 0, 0, 0},
		counts:   [][]int{{0, 2}, {3, 0}},
		accuracy: 0,
		macroF1:  0,
		perClass: []scores{{0, 0, 0, 2}, {0, 0, 0, 3}},
	}, {
		// No examples: every ratio is 0/0 → 0, no class takes part.
		name:     "no examples",
		labels:   []string{"neg", "pos"},
		counts:   [][]int{{0, 0}, {0, 0}},
		perClass: []scores{{0, 0, 0, 0}, {0, 0, 0, 0}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewConfusion(tc.labels, tc.truth, tc.pred)
			require.NoError(t, err)
			assert.Equal(t, tc.labels, c.Labels)
			assert.Equal(t, tc.counts, c.Counts)
			assert.InDelta(t, tc.accuracy, c.Accuracy(), tol, "accuracy")
			assert.InDelta(t, tc.macroF1, c.MacroF1(), tol, "macro F1")
			got := c.PerClass()
			require.Len(t, got, len(tc.perClass))
			for k, want := range tc.perClass {
				assert.Equal(t, tc.labels[k], got[k].Label)
				assert.InDelta(t, want.p, got[k].Precision, tol, "%s precision", got[k].Label)
				assert.InDelta(t, want.r, got[k].Recall, tol, "%s recall", got[k].Label)
				assert.InDelta(t, want.f1, got[k].F1, tol, "%s F1", got[k].Label)
				assert.Equal(t, want.support, got[k].Support, "%s support", got[k].Label)
			}
		})
	}
}

func TestMetricsScikitLearnRounded(t *testing.T) {
	// The values as the brief and scikit-learn's docs print them.
	c, err := NewConfusion([]string{"0", "1", "2"}, []int{0, 1, 2, 0, 1, 2}, []int{0, 2, 1, 0, 0, 1})
	require.NoError(t, err)
	assert.Equal(t, "0.267", fmt.Sprintf("%.3f", c.MacroF1()))
	assert.Equal(t, "0.333", fmt.Sprintf("%.3f", c.Accuracy()))
}

func TestConfusionErrors(t *testing.T) {
	labels := []string{"a", "b"}
	_, err := NewConfusion(labels, []int{0, 1}, []int{0})
	assert.EqualError(t, err, "finetune: confusion: 2 true labels but 1 predictions")
	_, err = NewConfusion(labels, []int{0, 2}, []int{0, 1})
	assert.EqualError(t, err, "finetune: confusion: example 1: true label id 2 is outside [0, 2)")
	_, err = NewConfusion(labels, []int{0, 1}, []int{-1, 1})
	assert.EqualError(t, err, "finetune: confusion: example 0: predicted label id -1 is outside [0, 2)")
	_, err = NewConfusion(nil, []int{0}, []int{0})
	assert.ErrorContains(t, err, "outside [0, 0)")
}

func TestConfusionCopiesLabels(t *testing.T) {
	labels := []string{"a", "b"}
	c, err := NewConfusion(labels, []int{0}, []int{1})
	require.NoError(t, err)
	labels[0] = "changed"
	assert.Equal(t, []string{"a", "b"}, c.Labels)
}

func TestConfusionHandBuiltDoesNotPanic(t *testing.T) {
	// Counts smaller than Labels (a caller's mistake): missing cells count 0.
	c := Confusion{Labels: []string{"a", "b", "c"}, Counts: [][]int{{2, 1}, {0}}}
	assert.InDelta(t, 2.0/3, c.Accuracy(), 1e-12) // 2 right of 3
	assert.Len(t, c.PerClass(), 3)
	assert.NotPanics(t, func() { _ = c.MacroF1(); _ = c.String() })
}

func TestConfusionString(t *testing.T) {
	c, err := NewConfusion([]string{"negative", "pos"}, []int{0, 0, 1, 1, 1}, []int{0, 1, 1, 1, 0})
	require.NoError(t, err)
	// negative: tp 1, fp 1, fn 1: P = R = F1 = 1/2; pos: tp 2, fp 1, fn 1: 2/3.
	want := "" +
		"label     precision  recall     f1  support\n" +
		"negative      0.500   0.500  0.500        2\n" +
		"pos           0.667   0.667  0.667        3\n" +
		"\n" +
		"true \\ predicted  negative  pos\n" +
		"negative                 1    1\n" +
		"pos                      1    2"
	assert.Equal(t, want, c.String())
}

func ExampleConfusion() {
	// scikit-learn's f1_score example.
	c, err := NewConfusion([]string{"cat", "dog", "eel"}, []int{0, 1, 2, 0, 1, 2}, []int{0, 2, 1, 0, 0, 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("accuracy %.3f, macro F1 %.3f\n%v\n", c.Accuracy(), c.MacroF1(), c)
	// Output:
	// accuracy 0.333, macro F1 0.267
	// label  precision  recall     f1  support
	// cat        0.667   1.000  0.800        2
	// dog        0.000   0.000  0.000        2
	// eel        0.000   0.000  0.000        2
	//
	// true \ predicted  cat  dog  eel
	// cat                 2    0    0
	// dog                 1    0    1
	// eel                 0    2    0
}

package finetune

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/d73a19ff/zoo/internal/heatmap"
)

// Confusion is a confusion matrix over K = len(Labels) classes: Counts has
// shape (K, K) and Counts[t][p] is the number of examples of true class t
// predicted as class p.
type Confusion struct {
	Labels []string
	Counts [][]int
}

// ClassScore is one class's precision, recall and F1, and its support (the
// number of examples whose true class it is).
type ClassScore struct {
	Label                 string
	Precision, Recall, F1 float64
	Support               int
}

// NewConfusion counts truth against pred, both of shape (N) and holding
// class ids in [0, len(labels)). Different lengths and out-of-range ids are
// errors naming the example.
func NewConfusion(labels []string, truth, pred []int) (Confusion, error) {
	if len(truth) != len(pred) {
		return Confusion{}, fmt.Errorf("finetune: confusion: %d true labels but %d predictions", len(truth), len(pred))
	}
	k := len(labels)
	counts := make([][]int, k)
	for i := range counts {
		counts[i] = make([]int, k)
	}
	for i, t := range truth {
		p := pred[i]
		if t < 0 || t >= k {
			return Confusion{}, fmt.Errorf("finetune: confusion: example %d: true label id %d is outside [0, %d)", i, t, k)
		}
		if p < 0 || p >= k {
			return Confusion{}, fmt.Errorf("finetune: confusion: example %d: predicted label id %d is outside [0, %d)", i, p, k)
		}
		counts[t][p]++
	}
	return Confusion{Labels: slices.Clone(labels), Counts: counts}, nil
}

// at returns Counts[t][p], or 0 where a hand-built Counts is too small.
func (c Confusion) at(t, p int) int {
	if t < len(c.Counts) && p < len(c.Counts[t]) {
		return c.Counts[t][p]
	}
	return 0
}

// Accuracy returns the fraction of examples predicted correctly, the trace
// of Counts over its sum; 0 when there are no examples.
func (c Confusion) Accuracy() float64 {
	correct, total := 0, 0
	for t := range c.Labels {
		correct += c.at(t, t)
		for p := range c.Labels {
			total += c.at(t, p)
		}
	}
	return ratio(correct, total)
}

// PerClass returns the scores of every class, in the order of Labels.
// With tp, fp and fn the class's true positives, false positives and false
// negatives, precision = tp/(tp+fp), recall = tp/(tp+fn) and
// F1 = 2tp/(2tp+fp+fn), the harmonic mean of the two; a ratio with a zero
// denominator is 0, scikit-learn's default zero_division. A class absent
// from both the truth and the predictions scores 0 here but is left out of
// MacroF1.
func (c Confusion) PerClass() []ClassScore {
	out := make([]ClassScore, len(c.Labels))
	for k, label := range c.Labels {
		tp, support, predicted := c.class(k)
		out[k] = ClassScore{
			Label:     label,
			Precision: ratio(tp, predicted),
			Recall:    ratio(tp, support),
			F1:        ratio(2*tp, support+predicted),
			Support:   support,
		}
	}
	return out
}

// class returns class k's true positives, support (row sum: tp + fn) and
// number of predictions (column sum: tp + fp).
func (c Confusion) class(k int) (tp, support, predicted int) {
	for j := range c.Labels {
		support += c.at(k, j)
		predicted += c.at(j, k)
	}
	return c.at(k, k), support, predicted
}

// MacroF1 is the unweighted mean of per-class F1 over the classes that
// occur in the truth or in the predictions, as scikit-learn's
// f1_score(y_true, y_pred, average="macro") with its default zero_division:
// a class that is never true and never predicted is left out, and a class
// with zero precision and recall counts as 0. It is 0 when there are no
// examples.
func (c Confusion) MacroF1() float64 {
	sum, n := 0.0, 0
	for k := range c.Labels {
		if tp, support, predicted := c.class(k); support+predicted > 0 {
			sum += ratio(2*tp, support+predicted)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// ratio returns a/b, or 0 when b is 0.
func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// String formats the per-class scores and the matrix as two aligned tables
// (rows are true classes, columns predicted ones), for the CLI. It ends
// without a newline.
func (c Confusion) String() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	scores := [][]string{{"label", "precision", "recall", "f1", "support"}}
	for _, s := range c.PerClass() {
		scores = append(scores, []string{s.Label, f(s.Precision), f(s.Recall), f(s.F1), strconv.Itoa(s.Support)})
	}
	matrix := [][]string{append([]string{"true \\ predicted"}, c.Labels...)}
	for t, label := range c.Labels {
		row := []string{label}
		for p := range c.Labels {
			row = append(row, strconv.Itoa(c.at(t, p)))
		}
		matrix = append(matrix, row)
	}
	return table(scores) + "\n\n" + table(matrix)
}

// table aligns rows into columns two spaces apart: the first column on the
// left, the others on the right.
func table(rows [][]string) string {
	var widths []int
	for _, row := range rows {
		for i, cell := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	var sb strings.Builder
	for r, row := range rows {
		if r > 0 {
			sb.WriteByte('\n')
		}
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			switch {
			case i == 0 && i == len(row)-1:
				sb.WriteString(cell)
			case i == 0:
				sb.WriteString(cell + pad)
			default:
				sb.WriteString("  " + pad + cell)
			}
		}
	}
	return sb.String()
}

// WritePNG draws the confusion matrix to path as a PNG, atomically: rows
// are the true classes, columns the predicted ones, each cell coloured by
// its share of the row (the class's recall on the diagonal), with the
// class names on the axes (internal/heatmap). More than heatmap.MaxTokens
// classes is an error.
func (c Confusion) WritePNG(path, title string) error {
	k := len(c.Labels)
	if k == 0 || k > heatmap.MaxTokens {
		return fmt.Errorf("finetune: confusion png: %d classes: it draws 1 to %d", k, heatmap.MaxTokens)
	}
	w := make([][]float64, k)
	for t := range w {
		w[t] = make([]float64, k)
		_, support, _ := c.class(t)
		for p := range w[t] {
			w[t][p] = ratio(c.at(t, p), support)
		}
	}
	f := heatmap.Figure{Title: title, Rows: c.Labels, Cols: c.Labels, Panels: []heatmap.Panel{{Title: "true (rows) × predicted (columns)", Weights: w}}}
	if err := heatmap.WritePNG(path, f); err != nil {
		return fmt.Errorf("finetune: confusion png: %w", err)
	}
	return nil
}

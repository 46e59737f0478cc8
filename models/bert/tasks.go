package bert

import (
	"fmt"
	"strconv"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// ForTokenClassification is transformers' BertForTokenClassification:
// dropout (classifier_dropout, else hidden_dropout_prob) and a linear
// "classifier" (num_labels, d) on every token's hidden state (tagging,
// named entities).
type ForTokenClassification struct {
	*Model
	Classifier *layers.Linear // classifier
	Labels     []string       // tag names by id
	drop       layers.Dropout
}

// NewForTokenClassification puts a token-classification head for labels
// on m, initialised N(0, initializer_range²) with a zero bias, and records
// the labels in m.Config.ID2Label. It removes m's pooler: transformers'
// BertForTokenClassification has none (add_pooling_layer=False), so
// neither the model nor its checkpoints hold bert.pooler.*.
func NewForTokenClassification(m *Model, labels []string) (*ForTokenClassification, error) {
	if len(labels) < 2 || len(labels) > models.MaxLabels {
		return nil, fmt.Errorf("bert token classifier: %d labels; need 2 to %d", len(labels), models.MaxLabels)
	}
	if err := m.dropPooler(); err != nil {
		return nil, err
	}
	cl, err := layers.NewLinear(m.Store.Root().Sub("classifier"), m.Config.HiddenSize, len(labels), true)
	if err != nil {
		return nil, fmt.Errorf("bert token classifier: %w", err)
	}
	m.Config.ID2Label = map[string]string{}
	for i, l := range labels {
		m.Config.ID2Label[strconv.Itoa(i)] = l
	}
	m.arch = archTokenClassifier
	return &ForTokenClassification{Model: m, Classifier: cl, Labels: append([]string(nil), labels...), drop: layers.Dropout{P: m.Config.classifierDropout()}}, nil
}

// Logits maps a batch (B, T) to tag scores (B, T, num_labels).
func (c *ForTokenClassification) Logits(g *layers.Graph, in Inputs) (*gorgonia.Node, error) {
	h, err := c.Hidden(g, in)
	if err != nil {
		return nil, err
	}
	if h, err = c.drop.Forward(g, h); err != nil {
		return nil, fmt.Errorf("bert token classifier: %w", err)
	}
	return c.Classifier.Forward(g, h)
}

// Loss is the mean cross-entropy of the tag scores against labels (B, T)
// int, skipping layers.IgnoreIndex (padding, continuation word pieces); it
// returns the loss and the scores (B, T, num_labels).
func (c *ForTokenClassification) Loss(g *layers.Graph, in Inputs, labels *gorgonia.Node) (loss, logits *gorgonia.Node, err error) {
	if logits, err = c.Logits(g, in); err != nil {
		return nil, nil, err
	}
	if loss, err = layers.CrossEntropy(logits, labels, layers.IgnoreIndex, 0); err != nil {
		return nil, nil, fmt.Errorf("bert token classifier: %w", err)
	}
	return loss, logits, nil
}

// ForQuestionAnswering is transformers' BertForQuestionAnswering
// (extractive QA, SQuAD): a linear "qa_outputs" (2, d) on every token,
// giving the scores of the answer span's start and end.
//
// A DistilBERT one (DistilBertForQuestionAnswering) has dropout
// (qa_dropout) before qa_outputs.
type ForQuestionAnswering struct {
	*Model
	QAOutputs *layers.Linear // qa_outputs
	drop      layers.Dropout
}

// NewForQuestionAnswering puts a span head on m, initialised
// N(0, initializer_range²) with a zero bias. It removes m's pooler:
// transformers' BertForQuestionAnswering has none
// (add_pooling_layer=False), so neither the model nor its checkpoints hold
// bert.pooler.*.
func NewForQuestionAnswering(m *Model) (*ForQuestionAnswering, error) {
	if err := m.dropPooler(); err != nil {
		return nil, err
	}
	qa, err := layers.NewLinear(m.Store.Root().Sub("qa_outputs"), m.Config.HiddenSize, 2, true)
	if err != nil {
		return nil, fmt.Errorf("bert qa: %w", err)
	}
	m.arch = archQA
	return &ForQuestionAnswering{Model: m, QAOutputs: qa, drop: layers.Dropout{P: m.Config.QADropout}}, nil
}

// Logits maps a batch (B, T) to the start and end scores, each (B, T).
func (q *ForQuestionAnswering) Logits(g *layers.Graph, in Inputs) (start, end *gorgonia.Node, err error) {
	h, err := q.Hidden(g, in)
	if err != nil {
		return nil, nil, err
	}
	if h, err = q.drop.Forward(g, h); err != nil { // P 0 but for a DistilBERT
		return nil, nil, fmt.Errorf("bert qa: %w", err)
	}
	y, err := q.QAOutputs.Forward(g, h) // (B, T, 2)
	if err != nil {
		return nil, nil, err
	}
	b, t := y.Shape()[0], y.Shape()[1]
	y, err = gorgonia.Reshape(y, []int{b * t, 2})
	if err != nil {
		return nil, nil, fmt.Errorf("bert qa: %w", err)
	}
	if y, err = gorgonia.Transpose(y); err != nil { // (2, B·T)
		return nil, nil, fmt.Errorf("bert qa: %w", err)
	}
	out := make([]*gorgonia.Node, 2)
	for i := range out {
		s, err := gorgonia.Slice(y, gorgonia.S(i))
		if err != nil {
			return nil, nil, fmt.Errorf("bert qa: %w", err)
		}
		if out[i], err = gorgonia.Reshape(s, []int{b, t}); err != nil {
			return nil, nil, fmt.Errorf("bert qa: %w", err)
		}
	}
	return out[0], out[1], nil
}

// Loss is transformers' span loss: the mean of the start and end
// cross-entropies over the T positions, against start and end positions
// (B) int, clamped as transformers clamps them: a position past T (an
// answer outside the window) is ignored and a negative one is the first
// token. Rows equal to layers.IgnoreIndex (padding) are ignored too. A
// loss with every row ignored is 0.
func (q *ForQuestionAnswering) Loss(g *layers.Graph, in Inputs, startPos, endPos *gorgonia.Node) (loss, start, end *gorgonia.Node, err error) {
	if start, end, err = q.Logits(g, in); err != nil {
		return nil, nil, nil, err
	}
	ls, err := spanLoss(start, startPos)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bert qa: start: %w", err)
	}
	le, err := spanLoss(end, endPos)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bert qa: end: %w", err)
	}
	if loss, err = gorgonia.Add(ls, le); err != nil {
		return nil, nil, nil, fmt.Errorf("bert qa: %w", err)
	}
	var half any = float32(0.5)
	if g.Dtype() == tensor.Float64 {
		half = 0.5
	}
	if loss, err = gorgonia.Mul(loss, gorgonia.NewConstant(half)); err != nil {
		return nil, nil, nil, fmt.Errorf("bert qa: %w", err)
	}
	return loss, start, end, nil
}

package bert

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// runGrads runs g and checks that every learnable got a nonzero gradient.
func runGrads(t *testing.T, g *layers.Graph, loss *gorgonia.Node, outs ...*gorgonia.Node) []gorgonia.Value {
	grads, err := gorgonia.Grad(loss, g.Learnables()...)
	require.NoError(t, err)
	nodes := append(append([]*gorgonia.Node{}, outs...), grads...)
	vals := make([]gorgonia.Value, len(nodes))
	for i := range nodes {
		gorgonia.Read(nodes[i], &vals[i])
	}
	vm := gorgonia.NewTapeMachine(g.ExprGraph)
	defer vm.Close()
	require.NoError(t, vm.RunAll())
	for i, p := range g.Params() {
		var norm float64
		for _, v := range vals[len(outs)+i].(*tensor.Dense).Data().([]float32) {
			norm += float64(v * v)
		}
		require.Positive(t, norm, "%s got no gradient", p.Name)
	}
	return vals[:len(outs)]
}

func TestTokenClassification(t *testing.T) {
	m, err := New(testConfig(), layers.WithSeed(4))
	require.NoError(t, err)
	c, err := NewForTokenClassification(m, []string{"O", "B-PER", "I-PER"})
	require.NoError(t, err)
	g := m.Store.NewGraph()
	ids, labels := g.IntInput("input_ids", 2, 5), g.IntInput("labels", 2, 5)
	setInts(t, ids, []int{1, 4, 5, 6, 2, 1, 7, 8, 2, 0})
	setInts(t, labels, []int{-100, 1, 2, 0, -100, -100, 0, 1, -100, -100})
	loss, logits, err := c.Loss(g, Inputs{IDs: ids}, labels)
	require.NoError(t, err)
	runGrads(t, g, loss, logits)
	require.Equal(t, tensor.Shape{2, 5, 3}, logits.Shape())

	// Saved, it names its class; a sequence classifier refuses it.
	dir := t.TempDir()
	require.NoError(t, c.Save(dir))
	back, r, err := LoadForTokenClassification(dir, models.WithLabels(c.Labels...))
	require.NoError(t, err)
	require.Empty(t, r.Created)
	require.Equal(t, values(m.Store), values(back.Store))
	_, _, err = LoadForSequenceClassification(dir, models.WithLabels("a", "b", "c"))
	require.ErrorContains(t, err, "BertForTokenClassification checkpoint")
	_, err = LoadClassifier(dir)
	require.ErrorContains(t, err, "BertForTokenClassification checkpoint")
}

func TestQuestionAnswering(t *testing.T) {
	p, err := NewForPreTraining(testConfig(), layers.WithSeed(4))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, p.Save(dir))
	q, r, err := LoadForQuestionAnswering(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"qa_outputs.weight", "qa_outputs.bias"}, r.Created)
	require.Len(t, r.Dropped, 9) // the MLM and NSP heads and the pooler
	require.Equal(t, poolerKeys, r.Dropped[:2])
	g := q.Store.NewGraph()
	ids, start, end := g.IntInput("input_ids", 2, 6), g.IntInput("start_positions", 2), g.IntInput("end_positions", 2)
	setInts(t, ids, []int{1, 4, 2, 5, 6, 2, 1, 7, 2, 8, 9, 2})
	setInts(t, start, []int{3, 3})
	setInts(t, end, []int{4, 4})
	loss, s, e, err := q.Loss(g, Inputs{IDs: ids}, start, end)
	require.NoError(t, err)
	vals := runGrads(t, g, loss, s, e, loss)
	require.Equal(t, tensor.Shape{2, 6}, s.Shape())
	require.Equal(t, tensor.Shape{2, 6}, e.Shape())
	// The loss is the mean of the two cross-entropies, computed here by hand.
	ce := func(v []float32, row, target int) float64 {
		x := v[row*6 : row*6+6]
		var z float64
		for _, a := range x {
			z += math.Exp(float64(a))
		}
		return math.Log(z) - float64(x[target])
	}
	sv, ev := vals[0].Data().([]float32), vals[1].Data().([]float32)
	want := (ce(sv, 0, 3)+ce(sv, 1, 3))/4 + (ce(ev, 0, 4)+ce(ev, 1, 4))/4
	require.InDelta(t, want, float64(vals[2].Data().(float32)), 1e-5)
}

// Every learnable of the sequence classifier gets a gradient, with dropout
// on (classifier_dropout set), through its own Loss.
func TestSequenceClassificationGradients(t *testing.T) {
	cfg := testConfig()
	cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb = 0.1, 0.1
	p := 0.2
	cfg.ClassifierDropout = &p
	m, err := New(cfg, layers.WithSeed(8))
	require.NoError(t, err)
	c, err := NewForSequenceClassification(m, []string{"a", "b"})
	require.NoError(t, err)
	g := m.Store.NewGraph(layers.Training(), layers.DropoutSeed(2))
	ids, types, labels := g.IntInput("input_ids", 2, 5), g.IntInput("token_type_ids", 2, 5), g.IntInput("labels", 2)
	setInts(t, ids, []int{1, 4, 2, 5, 2, 1, 7, 2, 8, 2})
	setInts(t, types, []int{0, 0, 0, 1, 1, 0, 0, 0, 1, 1})
	setInts(t, labels, []int{0, 1})
	loss, logits, err := c.Loss(g, Inputs{IDs: ids, TokenTypes: types}, labels)
	require.NoError(t, err)
	runGrads(t, g, loss, logits)
	require.Len(t, g.Params(), len(m.Store.Params()))
}

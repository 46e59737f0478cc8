package bert

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/racetest"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/internal/graphrun"
)

// TestConcurrentInference runs BERT's inference entry points — FillMask,
// FillMaskBatch, Attentions, HiddenStates, and the sequence-classification,
// token-classification and question-answering heads as the pipelines run
// them — from 8 goroutines at once, sharing one model per head and one
// WordPiece tokenizer, and checks that every answer equals the same call
// made alone. The sequence classifier shares the masked LM's backbone.
// Run it with -race (the CI does).
func TestConcurrentInference(t *testing.T) {
	texts := []string{"the cat sat on the mat", "a dog ran in the park", "my bird sang at dawn"}
	tok, err := datasets.TrainWordPieceTexts(context.Background(), texts, datasets.WordPieceOptions{VocabSize: 200, MinFrequency: 1, Lowercase: true})
	require.NoError(t, err)
	cfg := sized(2, 32, 2, 64)
	cfg.VocabSize, cfg.MaxPositionEmbeddings = tok.VocabSize(), 16
	cfg.HiddenDropoutProb, cfg.AttentionProbsDropoutProb = 0, 0
	cfg.InitializerRange = 0.3 // varied scores
	mlm, err := NewForMaskedLM(cfg, layers.WithSeed(3))
	require.NoError(t, err)
	seq, err := NewForSequenceClassification(mlm.Model, []string{"neg", "pos"})
	require.NoError(t, err)
	m2, err := New(cfg, layers.WithSeed(4))
	require.NoError(t, err)
	tags, err := NewForTokenClassification(m2, []string{"O", "B", "I"})
	require.NoError(t, err)
	m3, err := New(cfg, layers.WithSeed(5))
	require.NoError(t, err)
	qa, err := NewForQuestionAnswering(m3)
	require.NoError(t, err)

	var ids, types [][]int
	for i, s := range texts {
		var x, ty []int
		if i == 2 {
			x, ty, err = tok.EncodePair(s, "the cat")
		} else {
			x, ty, err = tok.EncodeWithSpecials(s)
		}
		require.NoError(t, err)
		ids, types = append(ids, x), append(types, ty)
	}
	// heads runs the head that logits builds on a padded batch of ids, in
	// a graph of its own, as the pipelines' evaluations do.
	heads := func(store *layers.Store, logits func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error)) (any, error) {
		b, err := newBatch(cfg, ids, types)
		if err != nil {
			return nil, err
		}
		g := store.NewGraph()
		in, err := b.inputs(g)
		if err != nil {
			return nil, err
		}
		out, err := logits(g, in)
		if err != nil {
			return nil, err
		}
		return graphrun.Run(g, out...)
	}
	racetest.Check(t, 2,
		racetest.Call{Name: "FillMask", Run: func() (any, error) { return FillMask(mlm, tok, "the [MASK] sat on the mat", 3) }},
		racetest.Call{Name: "FillMaskBatch", Run: func() (any, error) {
			return FillMaskBatch(mlm, tok, []string{"a [MASK] ran in the [MASK]", "my bird [MASK] at dawn"}, 0)
		}},
		racetest.Call{Name: "Attentions", Run: func() (any, error) { return mlm.Attentions(ids[2], types[2]) }},
		racetest.Call{Name: "HiddenStates", Run: func() (any, error) { return mlm.HiddenStates(ids[2], types[2]) }},
		racetest.Call{Name: "sequence classifier", Run: func() (any, error) { return graphrun.ClassLogits(seq, ids, types) }},
		racetest.Call{Name: "token classifier", Run: func() (any, error) {
			return heads(tags.Store, func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error) {
				l, err := tags.Logits(g, in)
				return []*gorgonia.Node{l}, err
			})
		}},
		racetest.Call{Name: "question answering", Run: func() (any, error) {
			return heads(qa.Store, func(g *layers.Graph, in Inputs) ([]*gorgonia.Node, error) {
				s, e, err := qa.Logits(g, in)
				return []*gorgonia.Node{s, e}, err
			})
		}},
	)
}

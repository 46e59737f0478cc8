package seq2seq

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/racetest"
	"github.com/d73a19ff/zoo/layers"
)

// TestConcurrentInference runs seq2seq's inference entry points — Greedy,
// BeamSearch (with and without the KV cache), CrossAttention, Outputs
// (hidden states and attentions), Translate,
// an Ensemble's Greedy, BeamSearch and Translate, and TeacherTargets —
// from 8 goroutines at once on two models and one tokenizer, and checks
// that every answer equals the same call made alone. Calls of the same
// shapes compete for each model's cached encoder and step graphs, and the
// ensemble's calls share them with the single model's. Run it with -race
// (the CI does).
func TestConcurrentInference(t *testing.T) {
	texts := []string{"a b c d", "b c d e f", "c d e", "e f g a b", "g f e d c b"}
	tok, err := datasets.TrainWordLevelTexts(context.Background(), texts, datasets.WordLevelOptions{})
	require.NoError(t, err)
	cfg := Tiny()
	cfg.SrcVocabSize, cfg.TgtVocabSize = tok.VocabSize(), tok.VocabSize()
	a, err := New(cfg, layers.WithSeed(3))
	require.NoError(t, err)
	b, err := New(cfg, layers.WithSeed(4))
	require.NoError(t, err)
	ens, err := NewEnsemble(a, b)
	require.NoError(t, err)
	var srcs [][]int
	for _, s := range texts[:3] {
		ids, err := tok.Encode(s)
		require.NoError(t, err)
		srcs = append(srcs, ids)
	}
	beam := DecodeConfig{Beam: 3, NBest: 2, MaxLen: 8, LengthPenalty: 0.6}
	nocache := beam // compiles a graph per step: shorter
	nocache.NoCache, nocache.MaxLen = true, 5
	ex := []Example{{Src: srcs[0], Tgt: srcs[1]}, {Src: srcs[2], Tgt: srcs[0]}}
	racetest.Check(t, 1,
		racetest.Call{Name: "Greedy", Run: func() (any, error) { return a.Greedy(srcs, DecodeConfig{MaxLen: 8}) }},
		racetest.Call{Name: "Greedy one source", Run: func() (any, error) { return a.Greedy(srcs[:1], DecodeConfig{MaxLen: 8}) }},
		racetest.Call{Name: "BeamSearch", Run: func() (any, error) { return a.BeamSearch(srcs, beam) }},
		racetest.Call{Name: "BeamSearch without the cache", Run: func() (any, error) { return a.BeamSearch(srcs, nocache) }},
		racetest.Call{Name: "CrossAttention", Run: func() (any, error) { return a.CrossAttention(srcs[0], srcs[1]) }},
		racetest.Call{Name: "Outputs", Run: func() (any, error) {
			return a.Outputs(srcs[1], srcs[0], layers.Outputs{HiddenStates: true, Attentions: true, CrossAttentions: true})
		}},
		racetest.Call{Name: "Translate", Run: func() (any, error) {
			out, _, err := Translate(a, tok, texts, beam, false, 2, nil)
			return out, err
		}},
		racetest.Call{Name: "Ensemble Greedy", Run: func() (any, error) { return ens.Greedy(srcs, DecodeConfig{MaxLen: 8}) }},
		racetest.Call{Name: "Ensemble BeamSearch", Run: func() (any, error) { return ens.BeamSearch(srcs, beam) }},
		racetest.Call{Name: "Ensemble Translate", Run: func() (any, error) {
			out, _, err := ens.Translate(context.Background(), tok, texts[2:], DecodeConfig{Beam: 1, MaxLen: 8}, true, 3, nil)
			return out, err
		}},
		racetest.Call{Name: "TeacherTargets", Run: func() (any, error) { return TeacherTargets(ens, ex, 3, 2) }},
	)
}

// TestConcurrentPredict runs the translation pipeline (beam search, its
// n-best list and greedy decoding), one shared, from 8 goroutines at
// once, and checks that every answer equals the same call made alone.
// Run it with -race (the CI does).
func TestConcurrentPredict(t *testing.T) {
	dir, _ := savedTranslator(t, map[string]string{"num_beams": "2", "max_length": "6"})
	p, err := LoadTranslation(dir)
	require.NoError(t, err)
	p.BatchSize = 2
	greedy := *p
	greedy.Decode.Beam = 1
	texts := []string{"one two three", "sechs sieben", "zehn"}
	ctx := context.Background()
	racetest.Check(t, 1,
		racetest.Call{Name: "Translate", Run: func() (any, error) { return p.Translate(ctx, texts) }},
		racetest.Call{Name: "TranslateNBest", Run: func() (any, error) { return p.TranslateNBest(ctx, texts[1:], 2) }},
		racetest.Call{Name: "Translate greedy", Run: func() (any, error) { return greedy.Translate(ctx, texts) }},
	)
}

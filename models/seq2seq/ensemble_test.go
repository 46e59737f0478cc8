package seq2seq

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// An ensemble of a model with itself averages two equal distributions: it
// decodes exactly as the model alone, scores included.
func TestEnsembleOfCopiesIsTheModel(t *testing.T) {
	m := randomModel(t, 3, false)
	srcs := sources(4, 6, 2, 9)
	cfg := DecodeConfig{Beam: 3, NBest: 3, LengthPenalty: 0.6, MaxLen: 12}
	want, err := m.BeamSearch(srcs, cfg)
	require.NoError(t, err)
	e, err := NewEnsemble(m, m)
	require.NoError(t, err)
	got, err := e.BeamSearch(srcs, cfg)
	require.NoError(t, err)
	for i := range want {
		require.Len(t, got[i], len(want[i]))
		for j := range want[i] {
			assert.Equal(t, want[i][j].Tokens, got[i][j].Tokens, "source %d hypothesis %d", i, j)
			assert.InDelta(t, want[i][j].Score, got[i][j].Score, 1e-9, "source %d hypothesis %d", i, j)
		}
	}
	wantG, err := m.Greedy(srcs, cfg)
	require.NoError(t, err)
	gotG, err := e.Greedy(srcs, cfg)
	require.NoError(t, err)
	assert.Equal(t, wantG, gotG)
}

// Two different models (another depth and norm placement): every beam
// hypothesis's log P is the sum, over its tokens and eos, of the log of
// the mean of the two models' probabilities, each computed here from the
// model's own uncached decoder on the hypothesis's prefixes.
func TestEnsembleScoresAreMeanProbabilities(t *testing.T) {
	a := randomModel(t, 3, false)
	cfg := Tiny()
	cfg.SrcVocabSize, cfg.TgtVocabSize, cfg.NormFirst, cfg.NumDecoderLayers = 40, 40, true, 3
	b, err := New(cfg, layers.WithDtype(tensor.Float64), layers.WithSeed(8))
	require.NoError(t, err)
	e, err := NewEnsemble(a, b)
	require.NoError(t, err)
	srcs := sources(5, 7, 3)
	dc := DecodeConfig{Beam: 3, NBest: 3, MaxLen: 10}
	hyps, err := e.BeamSearch(srcs, dc)
	require.NoError(t, err)
	ha, err := a.BeamSearch(srcs, dc)
	require.NoError(t, err)
	hb, err := b.BeamSearch(srcs, dc)
	require.NoError(t, err)
	differs := false
	for i, src := range srcs {
		differs = differs || !assert.ObjectsAreEqual(hyps[i][0].Tokens, ha[i][0].Tokens) || !assert.ObjectsAreEqual(hyps[i][0].Tokens, hb[i][0].Tokens)
		for j, h := range hyps[i] {
			seq := append([]int{a.Config.BOSTokenID}, h.Tokens...)
			if h.EOS {
				seq = append(seq, a.Config.EOSTokenID)
			}
			want := 0.0
			for n := 1; n < len(seq); n++ {
				var probs, pads [2]float64
				for k, m := range []*Model{a, b} {
					st, err := m.start([][]int{src}, 1, DecodeConfig{MaxLen: 10, NoCache: true})
					require.NoError(t, err)
					var logits [][]float64
					for p := 1; p <= n; p++ { // the stepper sees every prefix length in turn
						logits, err = st.Step([][]int{seq[:p]})
						require.NoError(t, err)
					}
					st.close()
					var sum float64 // the softmax, directly: small logits, no overflow
					for _, x := range logits[0] {
						sum += math.Exp(x)
					}
					probs[k] = math.Exp(logits[0][seq[n]]) / sum
					pads[k] = math.Exp(logits[0][a.Config.PadTokenID]) / sum
				}
				if n == dc.MaxLen { // eos forced at the limit: log-probability 0
					break
				}
				// The mean distribution, renormalised without pad.
				want += math.Log((probs[0] + probs[1]) / (2 - pads[0] - pads[1]))
			}
			assert.InDelta(t, want, h.LogProb, 1e-9, "source %d hypothesis %d %v", i, j, h.Tokens)
		}
	}
	assert.True(t, differs, "the ensemble's best outputs should differ from a model's somewhere, or the test shows nothing")
}

// Models of different vocabularies cannot decode together.
func TestNewEnsembleMismatch(t *testing.T) {
	_, err := NewEnsemble()
	require.ErrorIs(t, err, errNoModels)
	_, err = Ensemble{}.BeamSearch(sources(1, 3), DecodeConfig{Beam: 2})
	require.ErrorIs(t, err, errNoModels)
	_, err = Ensemble{}.Greedy(sources(1, 3), DecodeConfig{})
	require.ErrorIs(t, err, errNoModels)
	_, err = NewEnsemble(modelFor(t, 20), modelFor(t, 21))
	require.ErrorContains(t, err, "vocab_size is 21, model 1's 20")
	a, b := modelFor(t, 20), modelFor(t, 20)
	b.Config.EOSTokenID = 3
	_, err = NewEnsemble(a, b)
	require.ErrorContains(t, err, "eos_token_id")
}

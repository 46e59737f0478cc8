package seq2seq

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/graphtest"
	"github.com/d73a19ff/zoo/layers"
)

// randomModel is an untrained float64 model with a vocabulary of 40, with
// weights large enough that outputs depend on every input.
func randomModel(t *testing.T, seed uint64, normFirst bool) *Model {
	cfg := Tiny()
	cfg.SrcVocabSize, cfg.TgtVocabSize, cfg.NormFirst = 40, 40, normFirst
	m, err := New(cfg, layers.WithDtype(tensor.Float64), layers.WithSeed(seed))
	require.NoError(t, err)
	return m
}

// sources of different lengths, so that the batch is padded.
func sources(seed uint64, lens ...int) [][]int {
	rng := rand.New(rand.NewPCG(seed, 3))
	out := make([][]int, len(lens))
	for i, n := range lens {
		for range n {
			out[i] = append(out[i], 3+rng.IntN(37))
		}
	}
	return out
}

func TestCachedEqualsUncached(t *testing.T) {
	for _, pre := range []bool{false, true} {
		m := randomModel(t, 3, pre)
		srcs := sources(1, 5, 9, 2)
		for _, cfg := range []DecodeConfig{{Beam: 1, MaxLen: 12}, {Beam: 3, NBest: 3, LengthPenalty: 0.6, MaxLen: 12}} {
			cached, err := m.BeamSearch(srcs, cfg)
			require.NoError(t, err)
			cfg.NoCache = true
			full, err := m.BeamSearch(srcs, cfg)
			require.NoError(t, err)
			for i := range cached {
				require.Equal(t, len(full[i]), len(cached[i]))
				for j := range cached[i] {
					assert.Equal(t, full[i][j].Tokens, cached[i][j].Tokens, "pre-norm %v beam %d source %d hypothesis %d", pre, cfg.Beam, i, j)
					assert.InDelta(t, full[i][j].Score, cached[i][j].Score, 1e-9)
				}
			}
		}
	}
}

func TestBeamOfOneIsGreedy(t *testing.T) {
	m := randomModel(t, 4, false)
	srcs := sources(2, 7, 3, 10, 1)
	greedy, err := m.Greedy(srcs, DecodeConfig{MaxLen: 15})
	require.NoError(t, err)
	beam, err := m.BeamSearch(srcs, DecodeConfig{Beam: 1, MaxLen: 15, LengthPenalty: 1})
	require.NoError(t, err)
	for i := range srcs {
		require.Equal(t, greedy[i], beam[i][0].Tokens, "source %d", i)
	}
}

func TestBeamOrderedByScore(t *testing.T) {
	m := randomModel(t, 5, true)
	hyps, err := m.BeamSearch(sources(3, 6, 4), DecodeConfig{Beam: 5, NBest: 5, LengthPenalty: 0.6, MaxLen: 10})
	require.NoError(t, err)
	for i, hs := range hyps {
		require.Len(t, hs, 5, "source %d", i)
		for j := 1; j < len(hs); j++ {
			require.GreaterOrEqual(t, hs[j-1].Score, hs[j].Score, "source %d hypothesis %d", i, j)
		}
		for _, h := range hs {
			n := len(h.Tokens)
			if h.Finished {
				n++
			}
			require.InDelta(t, h.LogProb/lengthPenalty(n, 0.6), h.Score, 1e-12)
		}
		// A wider beam finds a hypothesis at least as good as a beam of one.
		one, err := m.BeamSearch(sources(3, 6, 4)[i:i+1], DecodeConfig{Beam: 1, LengthPenalty: 0.6, MaxLen: 10})
		require.NoError(t, err)
		require.GreaterOrEqual(t, hs[0].Score, one[0][0].Score-1e-12)
	}
}

// Changing the tokens under a source's padding changes nothing: the
// encoder and cross-attention masks hide them.
func TestSourcePaddingIsMasked(t *testing.T) {
	m := randomModel(t, 6, false)
	g := m.Store.NewGraph()
	f := m.NewFeed(g, 2, 6, 4)
	logits, err := m.Forward(g, f.Inputs)
	require.NoError(t, err)
	b, err := m.Config.NewBatch([][]int{{5, 6, 7, 8, 9}, {10, 11}}, [][]int{{12, 13, 14}, {15}}, 2, 6, 4)
	require.NoError(t, err)
	run := func(b Batch) []float64 {
		require.NoError(t, f.Load(b))
		return runFloats(t, g, logits)
	}
	before := run(b)
	changed := b
	changed.Src = append([]int(nil), b.Src...)
	for j := 3; j < 6; j++ { // row 1's padding: pad tokens replaced, the mask kept
		changed.Src[6+j] = 20 + j
	}
	require.NoError(t, f.Load(changed))
	mask := f.SrcMask.Value().Data().([]float64)
	for j := 3; j < 6; j++ {
		mask[6+j] = 0
	}
	after := runFloats(t, g, logits)
	require.Equal(t, before, after)
	// and the test can fail: unmasking them does change the outputs
	for j := 3; j < 6; j++ {
		mask[6+j] = 1
	}
	require.NotEqual(t, before, runFloats(t, g, logits))
}

func TestBadDecodeInput(t *testing.T) {
	m := randomModel(t, 7, false)
	_, err := m.BeamSearch(sources(1, 3), DecodeConfig{Beam: 0})
	require.ErrorContains(t, err, "beam size 0")
	_, err = m.BeamSearch(sources(1, 3), DecodeConfig{Beam: 2, NBest: 3})
	require.ErrorContains(t, err, "n-best")
	_, err = m.Greedy([][]int{{5}, {}}, DecodeConfig{})
	require.ErrorContains(t, err, "source 1 is empty")
	_, err = m.Greedy(sources(1, m.Config.MaxLen), DecodeConfig{})
	require.ErrorContains(t, err, "max_len")
	_, err = m.Greedy([][]int{{5, 99}}, DecodeConfig{})
	require.ErrorContains(t, err, "outside the vocabulary")
	_, err = m.Greedy(nil, DecodeConfig{})
	require.ErrorContains(t, err, "no sources")
}

func TestLoadOtherFamily(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, layers.ConfigFile), []byte(`{"model_type": "gpt2", "n_embd": 32}`), 0o644))
	_, _, err := Load(dir)
	require.ErrorContains(t, err, `model_type "gpt2" is another model family`)
}

func TestSaveLoadRoundTrip(t *testing.T) {
	m := randomModel(t, 8, true)
	dir := t.TempDir()
	require.NoError(t, m.Save(dir))
	back, _, err := Load(dir, layers.WithDtype(tensor.Float64))
	require.NoError(t, err)
	require.Equal(t, m.Config, back.Config)
	srcs := sources(4, 4, 6)
	a, err := m.Greedy(srcs, DecodeConfig{MaxLen: 8})
	require.NoError(t, err)
	b, err := back.Greedy(srcs, DecodeConfig{MaxLen: 8})
	require.NoError(t, err)
	require.Equal(t, a, b)
}

// runFloats runs g and returns a copy of out's values.
func runFloats(t *testing.T, g *layers.Graph, out *gorgonia.Node) []float64 {
	t.Helper()
	v := graphtest.Run(t, g.ExprGraph, out)[0]
	return append([]float64(nil), v.Data().([]float64)...)
}

func TestCrossAttentionMaps(t *testing.T) {
	m := randomModel(t, 9, false)
	maps, err := m.CrossAttention([]int{5, 6, 7}, []int{8, 9})
	require.NoError(t, err)
	require.Len(t, maps, m.Config.NumDecoderLayers)
	for _, layer := range maps {
		require.Len(t, layer, m.Config.NumHeads)
		for _, head := range layer {
			require.Len(t, head, 3) // bos, 8, 9
			for _, row := range head {
				require.Len(t, row, 4) // 5, 6, 7, eos
				sum := 0.0
				for _, p := range row {
					require.GreaterOrEqual(t, p, 0.0)
					sum += p
				}
				require.InDelta(t, 1, sum, 1e-12)
			}
		}
	}
	_, err = m.CrossAttention(nil, []int{8})
	require.ErrorContains(t, err, "empty")
}

package seq2seq

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
)

// builds is how many decoding graphs m has compiled so far.
func builds(m *Model) int { return m.graphs.encoder.Builds() + m.graphs.step.Builds() }

// A second call with the same shapes compiles nothing and gives the same
// hypotheses; so does one whose lengths round to the same buckets, and it
// gives what a fresh model gives.
func TestDecodeReusesGraphs(t *testing.T) {
	m := randomModel(t, 3, false)
	srcs := sources(1, 5, 9, 2)
	for _, cfg := range []DecodeConfig{{Beam: 1, MaxLen: 12}, {Beam: 3, NBest: 3, LengthPenalty: 0.6, MaxLen: 12}} {
		first, err := m.BeamSearch(srcs, cfg)
		require.NoError(t, err)
		n := builds(m)
		again, err := m.BeamSearch(srcs, cfg)
		require.NoError(t, err)
		require.Equal(t, first, again)
		require.Equal(t, n, builds(m), "beam %d: the second call compiled graphs", cfg.Beam)

		near := cfg
		near.MaxLen = 10             // the same 16-step cache
		other := sources(2, 6, 8, 2) // 9 source positions with eos, as 10: 16 once padded
		got, err := m.BeamSearch(other, near)
		require.NoError(t, err)
		require.Equal(t, n, builds(m), "beam %d: nearby lengths compiled graphs", cfg.Beam)
		want, err := randomModel(t, 3, false).BeamSearch(other, near)
		require.NoError(t, err)
		require.Equal(t, want, got, "beam %d: a reused graph gives a fresh model's hypotheses", cfg.Beam)
	}
	greedy, err := m.Greedy(srcs, DecodeConfig{MaxLen: 12})
	require.NoError(t, err)
	n := builds(m)
	again, err := m.Greedy(srcs, DecodeConfig{MaxLen: 12})
	require.NoError(t, err)
	require.Equal(t, greedy, again)
	require.Equal(t, n, builds(m))
}

// The graphs bind the parameter tensors, so a weight changed in place (as
// loading and training change them) is seen by the next call, which gives
// exactly the hypotheses of a fresh model with that weight.
func TestGraphsSeeWeightChanges(t *testing.T) {
	srcs := sources(1, 5, 9, 2)
	cfg := DecodeConfig{Beam: 2, NBest: 2, MaxLen: 10}
	change := func(m *Model) {
		for _, w := range []*layers.Param{m.Encoder.Layers[0].FFN.Out.Weight, m.Decoder.Layers[1].FFN.Out.Weight} {
			d := w.Value.Data().([]float64)
			for i := range d {
				d[i] *= -3
			}
		}
		m.FinalLogitsBias.Value.Data().([]float64)[7] = 5 // a buffer, not a parameter
	}
	m := randomModel(t, 3, false)
	before, err := m.BeamSearch(srcs, cfg)
	require.NoError(t, err)
	n := builds(m)
	change(m)
	after, err := m.BeamSearch(srcs, cfg)
	require.NoError(t, err)
	require.Equal(t, n, builds(m))
	require.NotEqual(t, before, after, "the change must matter for the test to mean anything")
	fresh := randomModel(t, 3, false)
	change(fresh)
	want, err := fresh.BeamSearch(srcs, cfg)
	require.NoError(t, err)
	require.Equal(t, want, after)

	dir := t.TempDir()
	require.NoError(t, randomModel(t, 3, false).Save(dir))
	require.NoError(t, m.LoadWeights(filepath.Join(dir, layers.WeightsFile)))
	back, err := m.BeamSearch(srcs, cfg)
	require.NoError(t, err)
	require.Equal(t, before, back, "loaded weights are seen")
	require.Equal(t, n, builds(m))
}

// The caches stay within their bounds however many shapes are decoded, and
// ReleaseGraphs empties them.
func TestGraphCacheBounded(t *testing.T) {
	m := randomModel(t, 3, false)
	for b := 1; b <= 12; b++ {
		lens := make([]int, b)
		for i := range lens {
			lens[i] = 1 + (b+i)%8
		}
		_, err := m.Greedy(sources(uint64(b), lens...), DecodeConfig{MaxLen: 4})
		require.NoError(t, err)
	}
	for _, c := range []interface{ Len() (int, int64) }{&m.graphs.encoder, &m.graphs.step} {
		n, _ := c.Len()
		require.LessOrEqual(t, n, layers.DefaultMaxGraphs)
		require.Positive(t, n)
	}
	m.ReleaseGraphs()
	for _, c := range []interface{ Len() (int, int64) }{&m.graphs.encoder, &m.graphs.step} {
		n, _ := c.Len()
		require.Zero(t, n)
	}
	n := builds(m)
	_, err := m.Greedy(sources(1, 3), DecodeConfig{MaxLen: 4})
	require.NoError(t, err)
	require.Equal(t, n+2, builds(m), "released graphs are compiled again")
}

// Calls on several goroutines at once each get graphs of their own and the
// hypotheses they get alone.
func TestDecodeConcurrent(t *testing.T) {
	m := randomModel(t, 3, false)
	srcs := sources(1, 5, 9)
	// One Generation shared by every call: its rules are only read.
	gen := decode.Generation{Constraints: decode.Constraints{BadWords: [][]int{{5, 6}}, NoRepeatNGramSize: 3, ForcedEOS: []int{m.Config.EOSTokenID}}}
	cfg := DecodeConfig{Beam: 2, MaxLen: 8, LengthPenalty: 1, LengthPenaltyStyle: decode.HFPenalty, Generation: &gen}
	want, err := m.BeamSearch(srcs, cfg)
	require.NoError(t, err)
	wantG, err := m.Greedy(srcs, cfg)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2 {
				got, err := m.BeamSearch(srcs, cfg)
				if err != nil {
					t.Error(err)
					return
				}
				require.Equal(t, want, got)
				gotG, err := m.Greedy(srcs, cfg)
				if err != nil {
					t.Error(err)
					return
				}
				require.Equal(t, wantG, gotG)
			}
		}()
	}
	wg.Wait()
}

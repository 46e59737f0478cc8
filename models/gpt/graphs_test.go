package gpt

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// builds is how many decoding graphs m has compiled so far.
func builds(m *Model) int { c, u := m.graphs.Builds(); return c + u }

// A second call with the same shapes compiles nothing and gives the same
// tokens; so does one whose lengths round to the same buckets.
func TestGenerateReusesGraphs(t *testing.T) {
	m := microModel(t, tensor.Float64)
	prompts := [][]int{{5, 17, 3, 88, 1, 2, 9}, {40}, {7, 7, 7, 60}}
	for _, c := range []struct {
		name string
		cfg  GenerateConfig
	}{
		{"cache", Sampling(12, 0.9, 42)},
		{"nocache", GenerateConfig{MaxNewTokens: 12, Temperature: 0.9, TopP: 1, Seed: 42, NoCache: true}},
		{"sliding_window", Sampling(40, 1, 5)},
	} {
		t.Run(c.name, func(t *testing.T) {
			first, err := m.Generate(prompts, c.cfg)
			require.NoError(t, err)
			n := builds(m)
			again, err := m.Generate(prompts, c.cfg)
			require.NoError(t, err)
			require.Equal(t, first, again)
			require.Equal(t, n, builds(m), "the second call compiled graphs")

			// Prompts of 6 tokens and 10 new ones land in the same buckets.
			near := c.cfg
			near.MaxNewTokens -= 2
			short := [][]int{prompts[0][:6], prompts[1], prompts[2]}
			got, err := m.Generate(short, near)
			require.NoError(t, err)
			require.Equal(t, n, builds(m), "nearby lengths compiled graphs")
			fresh := microModel(t, tensor.Float64)
			want, err := fresh.Generate(short, near)
			require.NoError(t, err)
			require.Equal(t, want, got, "a reused graph gives a fresh model's tokens")
		})
	}
}

// Beam search reuses the graphs too, and a reordered cache left by one
// call does not leak into the next.
func TestBeamSearchReusesGraphs(t *testing.T) {
	m := microModel(t, tensor.Float64)
	prompts := [][]int{{5, 17, 3, 88, 1, 2, 9}, {40}}
	cfg := BeamConfig{Beam: 3, NBest: 3, LengthPenalty: 0.6, MaxNewTokens: 10}
	first, err := m.BeamSearch(prompts, cfg)
	require.NoError(t, err)
	n := builds(m)
	again, err := m.BeamSearch(prompts, cfg)
	require.NoError(t, err)
	require.Equal(t, first, again)
	require.Equal(t, n, builds(m))
	other := [][]int{{9, 9}, {1, 2, 3}}
	got, err := m.BeamSearch(other, cfg)
	require.NoError(t, err)
	require.Equal(t, n, builds(m))
	want, err := microModel(t, tensor.Float64).BeamSearch(other, cfg)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// The graphs bind the parameter tensors, so a weight changed in place (as
// loading and training change them) is seen by the next call, which gives
// exactly the tokens of a fresh model with that weight.
func TestGraphsSeeWeightChanges(t *testing.T) {
	prompts := [][]int{{5, 17, 3}, {40, 2}}
	for _, noCache := range []bool{false, true} {
		m := microModel(t, tensor.Float64)
		cfg := Greedy(10)
		cfg.NoCache = noCache
		before, err := m.Generate(prompts, cfg)
		require.NoError(t, err)
		n := builds(m)
		change := func(m *Model) {
			w := m.H.Layers[1].FFN.Out.Weight.Value.Data().([]float64)
			for i := range w {
				w[i] *= -3
			}
		}
		change(m)
		after, err := m.Generate(prompts, cfg)
		require.NoError(t, err)
		require.Equal(t, n, builds(m))
		require.NotEqual(t, before, after, "the change must matter for the test to mean anything")
		fresh := microModel(t, tensor.Float64)
		change(fresh)
		want, err := fresh.Generate(prompts, cfg)
		require.NoError(t, err)
		require.Equal(t, want, after, "no cache %v", noCache)

		// Loading weights writes into the same tensors.
		dir := t.TempDir()
		orig := microModel(t, tensor.Float64)
		require.NoError(t, orig.Save(dir))
		require.NoError(t, m.LoadWeights(filepath.Join(dir, layers.WeightsFile)))
		back, err := m.Generate(prompts, cfg)
		require.NoError(t, err)
		require.Equal(t, before, back)
		require.Equal(t, n, builds(m))
	}
}

// The cache stays within its bounds however many shapes are decoded, and
// ReleaseGraphs empties it.
func TestGraphCacheBounded(t *testing.T) {
	m := microModel(t, tensor.Float32)
	for rows := 1; rows <= 12; rows++ {
		prompts := make([][]int, rows)
		for r := range prompts {
			prompts[r] = []int{r + 1, 2, 3}
		}
		_, err := m.Generate(prompts, Greedy(3))
		require.NoError(t, err)
		cfg := Greedy(2)
		cfg.NoCache = true
		_, err = m.Generate(prompts, cfg)
		require.NoError(t, err)
	}
	for _, n := range []int{kvLen(m), fullLen(m)} {
		require.LessOrEqual(t, n, layers.DefaultMaxGraphs)
		require.Positive(t, n)
	}
	m.ReleaseGraphs()
	require.Zero(t, kvLen(m))
	require.Zero(t, fullLen(m))
	n := builds(m)
	_, err := m.Generate([][]int{{1, 2}}, Greedy(3))
	require.NoError(t, err)
	require.Equal(t, n+1, builds(m), "released graphs are compiled again")
}

func kvLen(m *Model) int   { n, _ := m.graphs.Len(); return n }
func fullLen(m *Model) int { _, n := m.graphs.Len(); return n }

// Calls on several goroutines at once each get graphs of their own and the
// tokens they get alone.
func TestGenerateConcurrent(t *testing.T) {
	m := microModel(t, tensor.Float64)
	prompts := [][]int{{5, 17, 3}, {40, 2}}
	want, err := m.Generate(prompts, Sampling(8, 1, 3))
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				got, err := m.Generate(prompts, Sampling(8, 1, 3))
				if err != nil || !slices.EqualFunc(got, want, slices.Equal) {
					t.Errorf("concurrent call: %v, %v", got, err)
				}
			}
		}()
	}
	wg.Wait()
}

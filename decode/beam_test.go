package decode

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// logProbs turns rows of probabilities into rows of logits.
func logProbs(rows ...[]float64) [][]float64 {
	out := make([][]float64, len(rows))
	for i, r := range rows {
		for _, p := range r {
			out[i] = append(out[i], math.Log(p))
		}
	}
	return out
}

// trap is a table where greedy decoding is led astray: after the start
// token 0, token 2 (p 0.5) beats token 3 (p 0.4), but after 2 the end
// token 1 has p 0.3 and after 3 it has p 0.9, so 3, end (0.36) beats
// 2, end (0.15).
var trap = logProbs(
	[]float64{0.025, 0.025, 0.5, 0.4, 0.05},
	[]float64{0.2, 0.2, 0.2, 0.2, 0.2},
	[]float64{0.175, 0.3, 0.175, 0.175, 0.175},
	[]float64{0.025, 0.9, 0.025, 0.025, 0.025},
	[]float64{0.2, 0.2, 0.2, 0.2, 0.2},
)

// pathLogProb is log P(tokens | last) by hand.
func pathLogProb(table [][]float64, last int, tokens []int) float64 {
	var lp float64
	for _, tok := range tokens {
		lp += table[last][tok] - LogSumExp(table[last])
		last = tok
	}
	return lp
}

func TestBeamFindsBetterThanGreedy(t *testing.T) {
	greedy, err := Sample(&markov{table: trap}, [][]int{{0}}, SampleConfig{MaxNewTokens: 5, TopP: 1, EOS: []int{1}})
	require.NoError(t, err)
	require.Equal(t, []int{2, 1}, greedy[0])
	one, err := BeamSearch(&markov{table: trap}, [][]int{{0}}, BeamConfig{Beam: 1, MaxNewTokens: 5, EOS: []int{1}})
	require.NoError(t, err)
	require.Equal(t, []int{2}, one[0][0].Tokens, "a beam of one is greedy")

	hyps, err := BeamSearch(&markov{table: trap}, [][]int{{0}}, BeamConfig{Beam: 2, NBest: 2, MaxNewTokens: 5, EOS: []int{1}})
	require.NoError(t, err)
	require.Len(t, hyps[0], 2)
	best := hyps[0][0]
	require.Equal(t, Hypothesis{Tokens: []int{3}, LogProb: best.LogProb, Score: best.LogProb, Finished: true, EOS: true}, best)
	require.InDelta(t, math.Log(0.36), best.LogProb, 1e-12)
	require.InDelta(t, math.Log(0.15), hyps[0][1].LogProb, 1e-12)
	require.Greater(t, best.Score, one[0][0].Score)
}

func TestBeamOfOneIsGreedy(t *testing.T) {
	table := randomTable(20, 2, 8)
	prompts := [][]int{{0}, {4, 5}, {9, 9, 9}}
	// greedy rows 11 10 5 14 16 9 6 17 6 17 …, 14 16 9 6 17 …, 6 17 6 17 …
	for _, eos := range [][]int{nil, {9}, {17, 5}} {
		greedy, err := Sample(&markov{table: table}, prompts, SampleConfig{MaxNewTokens: 15, TopP: 1, EOS: eos})
		require.NoError(t, err)
		beam, err := BeamSearch(&markov{table: table}, prompts, BeamConfig{Beam: 1, MaxNewTokens: 15, LengthPenalty: 1, EOS: eos})
		require.NoError(t, err)
		for r := range prompts {
			h := beam[r][0]
			want := greedy[r]
			if h.EOS {
				want = want[:len(want)-1]
			}
			require.Equal(t, want, h.Tokens, "eos %v row %d", eos, r)
			require.Equal(t, slices.ContainsFunc(greedy[r], func(tok int) bool { return slices.Contains(eos, tok) }), h.Finished)
		}
	}
}

// Hypotheses come best first, scored as their log-probability under the
// table over GNMT's length penalty; NBest 0 returns one.
func TestBeamNBest(t *testing.T) {
	table := randomTable(12, 1.5, 9)
	for _, alpha := range []float64{0, 0.6, 2} {
		for _, nbest := range []int{0, 1, 3, 6} {
			hyps, err := BeamSearch(&markov{table: table}, [][]int{{0}, {5}}, BeamConfig{Beam: 6, NBest: nbest, LengthPenalty: alpha, MaxNewTokens: 7, EOS: []int{1}})
			require.NoError(t, err)
			for s, hs := range hyps {
				require.Len(t, hs, max(nbest, 1))
				for j, h := range hs {
					if j > 0 {
						require.GreaterOrEqual(t, hs[j-1].Score, h.Score, "α %g source %d hypothesis %d", alpha, s, j)
					}
					tokens := h.Tokens
					if h.EOS {
						tokens = append(slices.Clone(tokens), 1)
					}
					require.InDelta(t, pathLogProb(table, []int{0, 5}[s], tokens), h.LogProb, 1e-9)
					require.InDelta(t, h.LogProb/LengthPenalty(h.Len(), alpha), h.Score, 1e-12)
					require.Equal(t, h.EOS, h.Finished)
					require.True(t, h.Finished || len(h.Tokens) == 7, "an unfinished hypothesis ran to the limit")
				}
			}
		}
	}
}

// The length penalty's α decides between a short and a long hypothesis.
func TestBeamLengthPenalty(t *testing.T) {
	// After 0: end (1) 0.4, token 2 0.6; after 2: end 0.6, token 3 0.4.
	// "end" has log P −0.92 over length 1; "2 end" −1.02 over length 2,
	// which wins once α > 0.45 or so.
	table := logProbs(
		[]float64{1e-9, 0.4, 0.6, 1e-9},
		[]float64{0.25, 0.25, 0.25, 0.25},
		[]float64{1e-9, 0.6, 1e-9, 0.4},
		[]float64{0.25, 0.25, 0.25, 0.25},
	)
	for _, c := range []struct {
		alpha float64
		want  []int
	}{{0, []int{}}, {0.3, []int{}}, {1, []int{2}}, {2, []int{2}}} {
		hyps, err := BeamSearch(&markov{table: table}, [][]int{{0}}, BeamConfig{Beam: 2, LengthPenalty: c.alpha, MaxNewTokens: 3, EOS: []int{1}})
		require.NoError(t, err)
		require.Equal(t, c.want, hyps[0][0].Tokens, "α %g", c.alpha)
		require.True(t, hyps[0][0].Finished)
	}
}

// A prompt is done once it has Beam finished hypotheses, and decoding
// stops when every prompt is done, long before MaxNewTokens.
func TestBeamEarlyStop(t *testing.T) {
	// The end token 1 is the likeliest after every token.
	table := logProbs(
		[]float64{0.1, 0.5, 0.2, 0.2},
		[]float64{0.1, 0.5, 0.2, 0.2},
		[]float64{0.1, 0.5, 0.2, 0.2},
		[]float64{0.1, 0.5, 0.2, 0.2},
	)
	m := &markov{table: table}
	hyps, err := BeamSearch(m, [][]int{{0}, {3, 2}}, BeamConfig{Beam: 2, NBest: 2, MaxNewTokens: 50, EOS: []int{1}})
	require.NoError(t, err)
	// step 0 ranks "1" first (finished) and keeps 2 and 3 alive; step 1
	// finishes "2 1" and "3 1" at ranks 0 and 1: done.
	require.Equal(t, 2, m.steps)
	for _, hs := range hyps {
		require.Len(t, hs, 2)
		require.Equal(t, []int{}, hs[0].Tokens)
		require.True(t, hs[0].Finished && hs[1].Finished)
	}
}

// Several prompts of different lengths decode in one batch of B·K rows as
// each does alone, and a stepper that keeps per-row state (checked by
// cached) follows the beams through Reorder.
func TestBeamBatchAndReorder(t *testing.T) {
	table := randomTable(15, 2, 10)
	prompts := [][]int{{0}, {4, 5, 6, 7}, {9, 9}}
	cfg := BeamConfig{Beam: 3, NBest: 3, LengthPenalty: 0.6, MaxNewTokens: 9, EOS: []int{2}}
	c := &cached{t: t, m: markov{table: table}}
	batch, err := BeamSearch(c, prompts, cfg)
	require.NoError(t, err)
	require.Positive(t, c.reorders)
	for s, p := range prompts {
		one, err := BeamSearch(&markov{table: table}, [][]int{p}, cfg)
		require.NoError(t, err)
		require.Equal(t, one[0], batch[s], "prompt %d", s)
	}
	stateless, err := BeamSearch(StepFunc((&markov{table: table}).Step), prompts, cfg)
	require.NoError(t, err)
	require.Equal(t, stateless, batch)
}

// A stop string finishes a hypothesis like an EOS token, but its token is
// kept.
func TestBeamStopStrings(t *testing.T) {
	table := randomTable(6, 1, 11)
	letters := func(toks []int) string {
		b := make([]byte, len(toks))
		for i, tk := range toks {
			b[i] = byte('a' + tk)
		}
		return string(b)
	}
	hyps, err := BeamSearch(&markov{table: table}, [][]int{{0}}, BeamConfig{Beam: 3, NBest: 3, MaxNewTokens: 8, StopStrings: []string{"cd", "f"}, Decode: letters})
	require.NoError(t, err)
	finished := 0
	for _, h := range hyps[0] {
		text := letters(h.Tokens)
		stops := slices.IndexFunc([]string{"cd", "f"}, func(s string) bool { return len(text) >= len(s) && text[len(text)-len(s):] == s })
		require.False(t, h.EOS)
		if h.Finished {
			finished++
			require.GreaterOrEqual(t, stops, 0, "%q ends with a stop string", text)
		}
		require.InDelta(t, pathLogProb(table, 0, h.Tokens), h.LogProb, 1e-9)
	}
	require.Positive(t, finished)
}

// Bad settings and steppers are errors, never panics.
func TestBeamErrors(t *testing.T) {
	good := &markov{table: trap}
	ok := BeamConfig{Beam: 2, MaxNewTokens: 3, EOS: []int{1}}
	with := func(f func(*BeamConfig)) BeamConfig { c := ok; f(&c); return c }
	for _, c := range []struct {
		st      Stepper
		prompts [][]int
		cfg     BeamConfig
		want    string
	}{
		{good, [][]int{{0}}, with(func(c *BeamConfig) { c.Beam = 0 }), "beam size 0"},
		{good, [][]int{{0}}, with(func(c *BeamConfig) { c.Beam = -3 }), "beam size -3"},
		{good, [][]int{{0}}, with(func(c *BeamConfig) { c.NBest = 3 }), "n-best 3"},
		{good, [][]int{{0}}, with(func(c *BeamConfig) { c.NBest = -1 }), "n-best -1"},
		{good, [][]int{{0}}, with(func(c *BeamConfig) { c.MaxNewTokens = 0 }), "max_new_tokens 0"},
		{good, [][]int{{0}}, with(func(c *BeamConfig) { c.LengthPenalty = -1 }), "length penalty -1"},
		{good, [][]int{{0}}, with(func(c *BeamConfig) { c.LengthPenalty = math.NaN() }), "length penalty NaN"},
		{good, [][]int{{0}}, with(func(c *BeamConfig) { c.LengthPenalty = math.Inf(1) }), "length penalty +Inf"},
		{good, [][]int{{0}}, with(func(c *BeamConfig) { c.StopStrings = []string{"x"} }), "need a Decode"},
		{good, nil, ok, "no prompts"},
		{good, [][]int{{0}, {}}, ok, "prompt 1 is empty"},
		{StepFunc(func([][]int) ([][]float64, error) { return nil, errors.New("boom") }), [][]int{{0}}, ok, "step 0: boom"},
		{StepFunc(func(s [][]int) ([][]float64, error) { return make([][]float64, len(s)-1), nil }), [][]int{{0}}, ok, "logits for 1 rows, want 2"},
		{failReorder{good}, [][]int{{0}}, ok, "reorder after step 0: cache lost"},
	} {
		_, err := BeamSearch(c.st, c.prompts, c.cfg)
		require.ErrorContains(t, err, c.want)
	}
	// NaN logits give hypotheses, not a panic.
	nan := StepFunc(func(s [][]int) ([][]float64, error) {
		out := make([][]float64, len(s))
		for r := range out {
			out[r] = []float64{math.NaN(), 0, math.NaN()}
		}
		return out, nil
	})
	_, err := BeamSearch(nan, [][]int{{0}}, ok)
	require.NoError(t, err)
}

type failReorder struct{ *markov }

func (failReorder) Reorder([]int) error { return errors.New("cache lost") }

func TestReorderRows(t *testing.T) {
	data := []float32{0, 0, 1, 1, 2, 2, 3, 3}
	scratch := ReorderRows(data, []int{2, 2, 0, 3}, nil)
	require.Equal(t, []float32{2, 2, 2, 2, 0, 0, 3, 3}, data)
	require.Len(t, scratch, len(data))
	again := ReorderRows(data, []int{0, 1, 2, 3}, scratch)
	require.Equal(t, []float32{2, 2, 2, 2, 0, 0, 3, 3}, data, "the identity changes nothing")
	require.Equal(t, &scratch[0], &again[0], "and keeps the scratch")
	// A cycle and a row read by two others.
	data = []float32{0, 0, 1, 1, 2, 2, 3, 3, 4, 4}
	ReorderRows(data, []int{1, 2, 0, 0, 4}, scratch)
	require.Equal(t, []float32{1, 1, 2, 2, 0, 0, 0, 0, 4, 4}, data)
}

// ReorderCache moves the first used values of each of a row's parts and
// leaves the rest.
func TestReorderCache(t *testing.T) {
	// 3 rows of 2 parts of 3 values; the first 2 of each part are used.
	data := []int{
		10, 11, -1, 12, 13, -1,
		20, 21, -2, 22, 23, -2,
		30, 31, -3, 32, 33, -3,
	}
	ReorderCache(data, []int{2, 0, 0}, nil, 2, 2)
	require.Equal(t, []int{
		30, 31, -1, 32, 33, -1,
		10, 11, -2, 12, 13, -2,
		10, 11, -3, 12, 13, -3,
	}, data)
}

// The terms of sumExp and of sumExpFast (four equal ones at a time) are
// math.Exp's to a relative 3·2⁻⁵² over [−708, 0], and 0 below; LogSumExp
// agrees with a math.Exp sum to a relative 1e-15, with and without the
// vector path.
func TestSumExp(t *testing.T) {
	for _, c := range []struct {
		name string
		exp  func(x float64) float64
	}{
		{"go", func(x float64) float64 { return sumExp([]float64{x}, 0) }},
		{"fast", func(x float64) float64 { return sumExpFast([]float64{x, x, x, x}, 0) / 4 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 1))
			worst := 0.0
			for i := 0; i < 1_000_000; i++ {
				x := -rng.Float64() * 30
				if i%10 == 0 {
					x = -rng.Float64() * 708
				}
				want := math.Exp(x)
				worst = max(worst, math.Abs(c.exp(x)-want)/want)
			}
			require.Less(t, worst, 3*0x1p-52, "relative error")
			for _, x := range []float64{0, math.Copysign(0, -1), -1e-300, -math.Ln2 / 128, -math.Ln2 / 2, -math.Ln2, -708} {
				require.InEpsilon(t, math.Exp(x), c.exp(x), 3*0x1p-52, "x = %g", x)
			}
			require.Zero(t, c.exp(-708.5))
			require.Zero(t, c.exp(math.Inf(-1)))
			require.Equal(t, 1.0, c.exp(0))
		})
	}
	rng := rand.New(rand.NewPCG(1, 1))
	x := make([]float64, 8003)
	for i := range x {
		x[i] = 3 * rng.NormFloat64()
	}
	x[17] = math.Inf(-1)
	hi := slices.Max(x)
	var sum float64
	for _, v := range x {
		sum += math.Exp(v - hi)
	}
	for _, vector := range []bool{true, false} {
		saved := useAVX2
		useAVX2 = useAVX2 && vector
		require.InEpsilon(t, hi+math.Log(sum), LogSumExp(x), 1e-15, "vector path %v", vector)
		require.Equal(t, 2.0, LogSumExp([]float64{2, math.Inf(-1), 1e-300 - 800, 2 - 1000, 2 - 708.5}))
		useAVX2 = saved
	}
	require.True(t, math.IsNaN(LogSumExp([]float64{math.Inf(-1), math.Inf(-1)})))
	require.True(t, math.IsNaN(LogSumExp([]float64{1, math.NaN()})))
}

// Early stopping: with α = 2, "end" (log P −0.69, length 1) finishes
// first, but "2 end" (log 0.45·0.99 = −0.81 over ((5+2)/6)² = 1.36: −0.59)
// scores higher. Stopping at the first Beam finished hypotheses, and the
// heuristic that scores the open beam "2" at its current length (−0.80),
// return "end"; "never" bounds what "2" can still reach (−0.80 over the
// penalty at MaxNewTokens) and finds "2 end".
func TestBeamEarlyStopping(t *testing.T) {
	table := logProbs(
		[]float64{1e-9, 0.5, 0.45, 0.05},
		[]float64{0.25, 0.25, 0.25, 0.25},
		[]float64{0.005, 0.99, 0.0025, 0.0025},
		[]float64{0.25, 0.25, 0.25, 0.25},
	)
	for _, c := range []struct {
		stop  Stopping
		want  []int
		steps int
	}{{StopAtBeam, []int{}, 1}, {StopHeuristic, []int{}, 1}, {StopNever, []int{2}, 2}} {
		m := &markov{table: table}
		hyps, err := BeamSearch(m, [][]int{{0}}, BeamConfig{Beam: 1, LengthPenalty: 2, MaxNewTokens: 5, EarlyStopping: c.stop, EOS: []int{1}})
		require.NoError(t, err)
		require.Equal(t, c.want, hyps[0][0].Tokens, "%v", c.stop)
		require.Equal(t, c.steps, m.steps, "%v", c.stop)
	}
}

// The later a prompt stops, the more finished hypotheses it has seen: the
// best score of "never" is at least the heuristic's, and that at least
// "true"'s, on random tables.
func TestBeamEarlyStoppingOrder(t *testing.T) {
	for seed := uint64(0); seed < 40; seed++ {
		table := randomTable(9, 2.5, seed)
		prompts := [][]int{{0}, {3}, {5, 6}}
		for _, alpha := range []float64{0, 0.6, 2} {
			var prev []float64
			for _, stop := range []Stopping{StopAtBeam, StopHeuristic, StopNever} {
				hyps, err := BeamSearch(&markov{table: table}, prompts, BeamConfig{Beam: 3, LengthPenalty: alpha, MaxNewTokens: 8, EarlyStopping: stop, EOS: []int{1}})
				require.NoError(t, err)
				for s, hs := range hyps {
					if prev != nil {
						require.GreaterOrEqual(t, hs[0].Score, prev[s]-1e-12, "seed %d α %g %v prompt %d", seed, alpha, stop, s)
					}
				}
				prev = prev[:0]
				for _, hs := range hyps {
					prev = append(prev, hs[0].Score)
				}
			}
		}
	}
}

func TestParseStopping(t *testing.T) {
	for _, s := range []Stopping{StopAtBeam, StopHeuristic, StopNever} {
		got, err := ParseStopping(s.String())
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
	_, err := ParseStopping("sometimes")
	require.ErrorContains(t, err, "true, false or never")
	require.ErrorContains(t, BeamConfig{Beam: 1, MaxNewTokens: 1, EarlyStopping: 7}.Validate(), "unknown early stopping")
}

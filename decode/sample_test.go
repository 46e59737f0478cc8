package decode

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// markov is a Stepper whose logits depend only on each row's last token:
// table[last] (V). It counts its steps.
type markov struct {
	table [][]float64
	steps int
}

func (m *markov) Step(seqs [][]int) ([][]float64, error) {
	m.steps++
	out := make([][]float64, len(seqs))
	for r, s := range seqs {
		out[r] = m.table[s[len(s)-1]]
	}
	return out, nil
}

func (m *markov) Reorder([]int) error { return nil }

// cached is a markov table behind a per-row state, as a KV cache would be:
// it remembers every row it has been shown and checks that the next Step
// grows each row (as Reorder left it) by exactly one token. It fails the
// test on any other call.
type cached struct {
	t        *testing.T
	m        markov
	state    [][]int
	reorders int
}

func (c *cached) Step(seqs [][]int) ([][]float64, error) {
	c.t.Helper()
	if c.state != nil {
		require.Len(c.t, seqs, len(c.state))
		for r, s := range seqs {
			require.Equal(c.t, c.state[r], s[:len(s)-1], "row %d does not continue its state", r)
			require.Len(c.t, s, len(c.state[r])+1)
		}
	}
	c.state = make([][]int, len(seqs))
	for r, s := range seqs {
		c.state[r] = append([]int(nil), s...)
	}
	return c.m.Step(seqs)
}

func (c *cached) Reorder(parents []int) error {
	c.reorders++
	old := c.state
	c.state = make([][]int, len(old))
	for r, p := range parents {
		c.state[r] = old[p]
	}
	return nil
}

// randomTable is a V×V Markov table of logits N(0, scale²), with no ties.
func randomTable(v int, scale float64, seed uint64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	t := make([][]float64, v)
	for i := range t {
		t[i] = make([]float64, v)
		for j := range t[i] {
			t[i][j] = scale * rng.NormFloat64()
		}
	}
	return t
}

// walk is greedy decoding of n tokens after last, by hand.
func walk(table [][]float64, last, n int) []int {
	var out []int
	for range n {
		last = argmax(table[last])
		out = append(out, last)
	}
	return out
}

func TestSampleGreedyLimits(t *testing.T) {
	table := randomTable(12, 2, 1)
	prompts := [][]int{{0}, {5, 3}, {7, 7, 7, 11}}
	for _, c := range []struct {
		name string
		cfg  SampleConfig
	}{
		{"greedy", Greedy(9)},
		{"top_k_1", SampleConfig{MaxNewTokens: 9, Temperature: 1.5, TopK: 1, TopP: 1, Seed: 3}},
		{"top_p_tiny", SampleConfig{MaxNewTokens: 9, Temperature: 1.5, TopP: 1e-9, Seed: 4}},
		{"top_k_and_top_p_tiny", SampleConfig{MaxNewTokens: 9, Temperature: 1, TopK: 5, TopP: 1e-9, Seed: 5}},
		{"temperature_to_0", Sampling(9, 1e-6, 6)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Sample(&markov{table: table}, prompts, c.cfg)
			require.NoError(t, err)
			for r, p := range prompts {
				require.Equal(t, walk(table, p[len(p)-1], 9), got[r], "row %d", r)
			}
		})
	}
}

// Equal seeds give equal tokens, other seeds other tokens, and the tokens
// are those of the full-sort sampler decode replaced.
func TestSampleSeeds(t *testing.T) {
	table := randomTable(50, 1, 2) // flat enough that sampling wanders
	prompts := [][]int{{0}, {1}, {2}}
	for _, c := range []struct {
		name string
		cfg  SampleConfig
	}{
		{"temperature", Sampling(30, 0.9, 42)},
		{"top_k", SampleConfig{MaxNewTokens: 30, Temperature: 1.3, TopK: 5, TopP: 1, Seed: 3}},
		{"top_p", SampleConfig{MaxNewTokens: 30, Temperature: 1, TopP: 0.8, Seed: 4}},
		{"top_k_top_p", SampleConfig{MaxNewTokens: 30, Temperature: 0.7, TopK: 20, TopP: 0.9, Seed: 5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := Sample(&markov{table: table}, prompts, c.cfg)
			require.NoError(t, err)
			b, err := Sample(&markov{table: table}, prompts, c.cfg)
			require.NoError(t, err)
			require.Equal(t, a, b)
			other := c.cfg
			other.Seed++
			o, err := Sample(&markov{table: table}, prompts, other)
			require.NoError(t, err)
			require.NotEqual(t, a, o)

			ref := newFullSort(c.cfg, len(prompts))
			for r, p := range prompts {
				last := p[len(p)-1]
				for i, tok := range a[r] {
					last = ref.next(r, table[last])
					require.Equal(t, last, tok, "row %d token %d", r, i)
				}
			}
		})
	}
}

// On random vocabularies of GPT-2's size and smaller, the partial
// selection picks exactly the tokens of a stable sort of the whole
// vocabulary, over peaked and flat distributions.
func TestSamplerMatchesFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, v := range []int{3, 100, 600, 50257} {
		for _, scale := range []float64{0.1, 3, 12} {
			logits := make([]float64, v)
			for i := range logits {
				logits[i] = scale * rng.NormFloat64()
				if i%7 == 3 {
					logits[i] = logits[i-1] // ties go to the smaller id
				}
			}
			for _, cfg := range []SampleConfig{
				{Temperature: 1, TopK: 40, TopP: 1},
				{Temperature: 0.8, TopK: v - 1, TopP: 1},
				{Temperature: 1, TopP: 0.9},
				{Temperature: 2, TopP: 0.999},
				{Temperature: 1, TopP: 0.3},
				{Temperature: 1, TopK: 50, TopP: 0.5},
			} {
				cfg.Seed = uint64(v)
				s, ref := newSampler(cfg, 1), newFullSort(cfg, 1)
				draws := 10
				if v > 10000 {
					draws = 2 // the reference sorts 50257 ids per draw
				}
				for i := range draws {
					require.Equal(t, ref.next(0, logits), s.next(0, logits), "V %d scale %g %+v draw %d", v, scale, cfg, i)
				}
			}
		}
	}
}

func TestTopK(t *testing.T) {
	logits := []float64{1, 5, 3, 5, -2, 3, 0}
	for k, want := range [][]int{1: {1}, 2: {1, 3}, 3: {1, 3, 2}, 4: {1, 3, 2, 5}, 7: {1, 3, 2, 5, 0, 6, 4}} {
		if want != nil {
			require.Equal(t, want, topK(logits, k, nil), "k %d", k)
		}
	}
}

// Sampling never leaves the top-k or the nucleus.
func TestSampleStaysInFilter(t *testing.T) {
	logits := []float64{0, 3, 1, 2.9, -1, 2.5, 0.5}
	// softmax at temperature 1: tokens 1, 3 and 5 hold 0.36, 0.32 and 0.22
	// of the mass, so top_p 0.8 keeps those three
	for _, c := range []struct {
		cfg     SampleConfig
		allowed []int
	}{
		{SampleConfig{Temperature: 1, TopK: 2, TopP: 1}, []int{1, 3}},
		{SampleConfig{Temperature: 1, TopP: 0.8}, []int{1, 3, 5}},
		{SampleConfig{Temperature: 5, TopK: 3, TopP: 1}, []int{1, 3, 5}},
	} {
		s := newSampler(c.cfg, 1)
		seen := map[int]bool{}
		for range 500 {
			tok := s.next(0, logits)
			require.Contains(t, c.allowed, tok, "%+v", c.cfg)
			seen[tok] = true
		}
		require.Len(t, seen, len(c.allowed), "%+v samples every allowed token", c.cfg)
	}
}

// A row ends at an EOS token (kept) or a stop string; OnToken sees every
// returned token; the stepper still sees rows growing in step.
func TestSampleStops(t *testing.T) {
	table := randomTable(26, 2, 8) // greedy rows 20 10 25 …, 16 21 7 23 18 …, 6 4 23 18 …
	prompts := [][]int{{0}, {1}, {2}}
	free, err := Sample(&markov{table: table}, prompts, Greedy(12))
	require.NoError(t, err)

	letters := func(toks []int) string {
		var b strings.Builder
		for _, tk := range toks {
			b.WriteRune(rune('a' + tk))
		}
		return b.String()
	}
	cfg := Greedy(12)
	cfg.EOS = []int{free[0][2]}
	cfg.StopStrings = []string{"", letters(free[1][3:5])}
	cfg.Decode = letters
	streamed := make([][]int, len(prompts))
	cfg.OnToken = func(row, tok int) { streamed[row] = append(streamed[row], tok) }
	c := &cached{t: t, m: markov{table: table}}
	got, err := Sample(c, prompts, cfg)
	require.NoError(t, err)
	require.Equal(t, streamed, got)

	for r := range prompts {
		want := free[r]
		for i := range want {
			if want[i] == cfg.EOS[0] || strings.Contains(letters(want[:i+1]), cfg.StopStrings[1]) {
				want = want[:i+1]
				break
			}
		}
		require.Equal(t, want, got[r], "row %d", r)
	}
	require.Equal(t, free[0][:3], got[0], "row 0 ends at the EOS token, keeping it")
	require.Equal(t, free[1][:5], got[1], "row 1 ends at the stop string")
	require.Equal(t, free[2][:4], got[2], "so does row 2, earlier")
}

// Decoding ends as soon as every row has ended.
func TestSampleEndsWhenAllRowsEnd(t *testing.T) {
	table := [][]float64{{0, 1, 0}, {0, 0, 1}, {1, 0, 0}} // 0 → 1 → 2 → 0
	m := &markov{table: table}
	cfg := Greedy(10)
	cfg.EOS = []int{2}
	got, err := Sample(m, [][]int{{0}, {1}}, cfg)
	require.NoError(t, err)
	require.Equal(t, [][]int{{1, 2}, {2}}, got)
	require.Equal(t, 2, m.steps)
}

// Rows of different lengths decode in one batch as they do alone.
func TestSampleBatchEqualsSingle(t *testing.T) {
	table := randomTable(30, 1, 4)
	prompts := [][]int{{5, 17, 3, 8, 1, 2, 9}, {20}, {7, 7, 7, 6}}
	for _, cfg := range []SampleConfig{Greedy(10), Sampling(10, 1, 9)} {
		batch, err := Sample(&cached{t: t, m: markov{table: table}}, prompts, cfg)
		require.NoError(t, err)
		for r, p := range prompts {
			one, err := Sample(&markov{table: table}, [][]int{p}, cfg)
			require.NoError(t, err)
			if cfg.Temperature == 0 {
				require.Equal(t, one[0], batch[r], "row %d", r)
			}
			require.Len(t, batch[r], 10)
		}
	}
}

// Bad settings, prompts and steppers are errors, never panics.
func TestSampleErrors(t *testing.T) {
	table := randomTable(5, 1, 5)
	good := &markov{table: table}
	bad := func(f func(seqs [][]int) ([][]float64, error)) Stepper { return StepFunc(f) }
	for _, c := range []struct {
		st      Stepper
		prompts [][]int
		cfg     SampleConfig
		want    string
	}{
		{good, [][]int{{1}}, SampleConfig{MaxNewTokens: 0, TopP: 1}, "max_new_tokens 0"},
		{good, [][]int{{1}}, SampleConfig{MaxNewTokens: 1, TopP: 0}, "top_p 0 is outside (0, 1]"},
		{good, [][]int{{1}}, SampleConfig{MaxNewTokens: 1, TopP: -0.5}, "top_p -0.5"},
		{good, [][]int{{1}}, SampleConfig{MaxNewTokens: 1, TopP: 1.5}, "top_p 1.5"},
		{good, [][]int{{1}}, SampleConfig{MaxNewTokens: 1, TopP: math.NaN()}, "top_p NaN"},
		{good, [][]int{{1}}, SampleConfig{MaxNewTokens: 1, TopP: 1, TopK: -1}, "top_k -1"},
		{good, [][]int{{1}}, SampleConfig{MaxNewTokens: 1, TopP: 1, Temperature: -1}, "temperature -1"},
		{good, [][]int{{1}}, SampleConfig{MaxNewTokens: 1, TopP: 1, Temperature: math.Inf(1)}, "temperature +Inf"},
		{good, [][]int{{1}}, SampleConfig{MaxNewTokens: 1, TopP: 1, StopStrings: []string{"x"}}, "need a Decode"},
		{good, nil, Greedy(1), "no prompts"},
		{good, [][]int{{1}, {}}, Greedy(1), "prompt 1 is empty"},
		{bad(func([][]int) ([][]float64, error) { return nil, errors.New("out of memory") }), [][]int{{1}}, Greedy(1), "step 0: out of memory"},
		{bad(func([][]int) ([][]float64, error) { return [][]float64{{1}}, nil }), [][]int{{1}, {2}}, Greedy(1), "logits for 1 rows, want 2"},
		{bad(func([][]int) ([][]float64, error) { return [][]float64{{}}, nil }), [][]int{{1}}, Greedy(1), "0 logits for row 0"},
		{bad(func([][]int) ([][]float64, error) { return [][]float64{{1, 2}, {1}}, nil }), [][]int{{1}, {2}}, Greedy(1), "1 logits for row 1, want a vocabulary of 2"},
	} {
		_, err := Sample(c.st, c.prompts, c.cfg)
		require.ErrorContains(t, err, c.want)
	}
}

// NaN and infinite logits give some token, not a panic.
func TestSampleOddLogits(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, row := range [][]float64{{nan, nan, nan}, {1, nan, 2}, {inf, 1, inf}, {-inf, -inf, -inf}, {-inf, 0, -inf}} {
		for _, cfg := range []SampleConfig{Greedy(3), Sampling(3, 1, 1), {MaxNewTokens: 3, Temperature: 1, TopK: 2, TopP: 1}, {MaxNewTokens: 3, Temperature: 1, TopP: 0.5}} {
			st := StepFunc(func(seqs [][]int) ([][]float64, error) { return [][]float64{row}, nil })
			out, err := Sample(st, [][]int{{0}}, cfg)
			require.NoError(t, err, fmt.Sprint(row))
			for _, tok := range out[0] {
				require.True(t, tok >= 0 && tok < 3, "%v %+v: token %d", row, cfg, tok)
			}
		}
	}
}

// fullSort is the sampler this package replaced (models/gpt/sample.go): it
// stable-sorts the whole vocabulary whenever top-k or top-p is on. It is
// the reference for the tokens and the "before" of the benchmarks.
type fullSort struct {
	cfg  SampleConfig
	rngs []*rand.Rand
	idx  []int
	prob []float64
}

func newFullSort(cfg SampleConfig, rows int) *fullSort {
	s := &fullSort{cfg: cfg}
	for r := 0; r < rows; r++ {
		s.rngs = append(s.rngs, rand.New(rand.NewPCG(cfg.Seed, uint64(r))))
	}
	return s
}

func (s *fullSort) next(row int, logits []float64) int {
	best := argmax(logits)
	if s.cfg.Temperature == 0 {
		return best
	}
	s.idx, s.prob = s.idx[:0], s.prob[:0]
	for j := range logits {
		s.idx = append(s.idx, j)
	}
	if (s.cfg.TopK > 0 && s.cfg.TopK < len(logits)) || s.cfg.TopP < 1 {
		sort.SliceStable(s.idx, func(a, b int) bool { return logits[s.idx[a]] > logits[s.idx[b]] })
		if k := s.cfg.TopK; k > 0 && k < len(s.idx) {
			s.idx = s.idx[:k]
		}
	}
	mx := logits[best]
	var sum float64
	for _, j := range s.idx {
		p := math.Exp((logits[j] - mx) / s.cfg.Temperature)
		s.prob = append(s.prob, p)
		sum += p
	}
	keep := len(s.idx)
	if s.cfg.TopP < 1 {
		var mass float64
		for i, p := range s.prob {
			mass += p / sum
			if mass >= s.cfg.TopP {
				keep = i + 1
				break
			}
		}
	}
	var total float64
	for _, p := range s.prob[:keep] {
		total += p
	}
	u := s.rngs[row].Float64() * total
	for i, p := range s.prob[:keep] {
		if u < p {
			return s.idx[i]
		}
		u -= p
	}
	return s.idx[keep-1]
}

package layers

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// batchLM is rotaryLM's tiny LLaMA-shaped model (rotary positions,
// grouped-query attention) in dtype dt, with a context of 40.
func batchLM(t *testing.T, dt tensor.Dtype) *CausalLM {
	t.Helper()
	s, err := NewStore(WithDtype(dt), WithSeed(5), WithInitStd(0.5))
	require.NoError(t, err)
	const vocab, d = 24, 8
	wte, err := NewEmbedding(s.Root().Sub("embed_tokens"), vocab, d)
	require.NoError(t, err)
	rot, err := NewRotary(4, 10000)
	require.NoError(t, err)
	cfg := BlockConfig{Dim: d, Heads: 4, KVHeads: 2, HeadDim: 4, FFNDim: 16, Activation: "gelu", Norm: PreNorm,
		LayerNormEps: 1e-5, Causal: true, Positions: rot}
	stack, err := NewEncoder(s.Root().Sub("model"), cfg, 2)
	require.NoError(t, err)
	return &CausalLM{
		Name:  "batch lm",
		Store: s,
		Embed: func(g *Graph, ids, _ *gorgonia.Node) (*gorgonia.Node, error) { return wte.Forward(g, ids) },
		Stack: stack, Head: wte.Logits, Context: 40,
		Graphs: &CausalGraphs{},
	}
}

func argmaxOf(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// aloneLogits decodes prompt greedily for n tokens with a CausalStepper of
// its own and returns the logits of every step.
func aloneLogits(t *testing.T, lm *CausalLM, prompt []int, n int) [][]float64 {
	t.Helper()
	st, err := lm.NewStepper(CausalOptions{MaxNewTokens: n, NoSlidingWindow: true})
	require.NoError(t, err)
	defer st.Close()
	seq := append([]int(nil), prompt...)
	var out [][]float64
	for range n {
		l, err := st.Step([][]int{seq})
		require.NoError(t, err)
		out = append(out, append([]float64(nil), l[0]...))
		seq = append(seq, argmaxOf(l[0]))
	}
	return out
}

// A sequence's logits in a running batch are the ones it gets decoded
// alone by a CausalStepper, bit for bit in float64; in float32 to 1e-5
// (the float32 matrix products of (R, 1) round differently from those of
// (1, 1)), with the same greedy tokens: for
// sequences of different prompt lengths and lengths joining at different
// steps, a sequence skipping steps (its row idle), one leaving early and
// a new one taking its row.
func TestCausalBatchEqualsAlone(t *testing.T) {
	type seq struct {
		prompt []int
		n      int // new tokens
		join   int // the step at which it joins
		skip   map[int]bool
	}
	seqs := []seq{
		{prompt: []int{1, 2, 3}, n: 12, join: 0},
		{prompt: []int{5, 9, 2, 7, 7, 1, 3, 4, 20, 11, 2, 6, 8, 15, 1, 2, 3, 19}, n: 6, join: 0}, // two prompt buckets
		{prompt: []int{4}, n: 9, join: 2, skip: map[int]bool{4: true, 5: true}},
		{prompt: []int{8, 8, 16, 2, 5}, n: 5, join: 7}, // takes the second's row once it left
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			lm := batchLM(t, dt)
			want := make([][][]float64, len(seqs))
			for i, s := range seqs {
				want[i] = aloneLogits(t, lm, s.prompt, s.n)
			}
			b, err := lm.NewBatch(3, 64)
			require.NoError(t, err)
			defer b.Close()
			got := make([][][]float64, len(seqs))
			row := make([]int, len(seqs))
			toks := make([][]int, len(seqs))
			for i := range row {
				row[i] = -1
			}
			for step := 0; step < 30; step++ {
				for i, s := range seqs {
					if s.join == step {
						r, l, err := b.Join(s.prompt, s.n)
						require.NoError(t, err, "seq %d", i)
						row[i], got[i] = r, [][]float64{l}
						toks[i] = []int{argmaxOf(l)}
					}
				}
				tokens := make([]int, b.Rows())
				for r := range tokens {
					tokens[r] = -1
				}
				any := false
				for i, s := range seqs {
					if row[i] < 0 || len(got[i]) == s.n || s.skip[step] {
						continue
					}
					tokens[row[i]] = toks[i][len(toks[i])-1]
					any = true
				}
				if any {
					out, err := b.Step(tokens)
					require.NoError(t, err)
					for i := range seqs {
						if row[i] >= 0 && tokens[row[i]] >= 0 && len(got[i]) < seqs[i].n {
							l := append([]float64(nil), out[row[i]]...)
							got[i] = append(got[i], l)
							toks[i] = append(toks[i], argmaxOf(l))
						}
					}
				}
				for i, s := range seqs {
					if row[i] >= 0 && len(got[i]) == s.n {
						b.Leave(row[i])
						row[i] = -2 // done
					}
				}
			}
			for i := range seqs {
				require.Len(t, got[i], seqs[i].n, "seq %d", i)
				for k := range got[i] {
					if dt == tensor.Float64 {
						require.Equal(t, want[i][k], got[i][k], "seq %d, step %d", i, k)
					} else {
						require.InDeltaSlice(t, want[i][k], got[i][k], 1e-5, "seq %d, step %d", i, k)
						require.Equal(t, argmaxOf(want[i][k]), argmaxOf(got[i][k]), "seq %d, step %d", i, k)
					}
				}
			}
		})
	}
}

// Join refuses a sequence that does not fit a row (ErrNoRoom) and a full
// batch (ErrBatchFull); Step checks its rows.
func TestCausalBatchChecks(t *testing.T) {
	lm := batchLM(t, tensor.Float64)
	b, err := lm.NewBatch(1, 32)
	require.NoError(t, err)
	defer b.Close()
	for _, c := range []struct {
		prompt []int
		n      int
	}{{[]int{1, 2}, 18}, {make([]int, 41), 1}, {[]int{1}, 40}} {
		_, _, err := b.Join(c.prompt, c.n)
		require.ErrorIs(t, err, ErrNoRoom, fmt.Sprint(len(c.prompt), c.n))
	}
	r, _, err := b.Join([]int{1, 2}, 17)
	require.NoError(t, err)
	_, _, err = b.Join([]int{3}, 2)
	require.True(t, errors.Is(err, ErrBatchFull), "%v", err)
	_, err = b.Step([]int{1, 2})
	require.Error(t, err)
	b.Leave(r)
	_, err = b.Step([]int{1})
	require.ErrorContains(t, err, "holds no sequence")
	require.Equal(t, 1, b.Free())
}

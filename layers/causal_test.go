package layers

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// rotaryLM is a tiny LLaMA-shaped causal LM in float64: token embeddings
// without learned positions, pre-norm blocks whose grouped-query attention
// (4 query heads, 2 key-value heads of width 4) rotates q and k (Rotary),
// and an LM head tied to the embeddings. positions says whether the
// attention has the rotary encoder.
func rotaryLM(t *testing.T, context int, positions bool) *CausalLM {
	t.Helper()
	s, err := NewStore(WithDtype(tensor.Float64), WithSeed(3), WithInitStd(0.5))
	require.NoError(t, err)
	const vocab, d = 24, 8
	wte, err := NewEmbedding(s.Root().Sub("embed_tokens"), vocab, d)
	require.NoError(t, err)
	cfg := BlockConfig{Dim: d, Heads: 4, KVHeads: 2, HeadDim: 4, FFNDim: 16, Activation: "gelu", Norm: PreNorm,
		LayerNormEps: 1e-5, Causal: true}
	if positions {
		if cfg.Positions, err = NewRotary(4, 10000); err != nil {
			t.Fatal(err)
		}
	}
	stack, err := NewEncoder(s.Root().Sub("model"), cfg, 2)
	require.NoError(t, err)
	return &CausalLM{
		Name:  "rotary lm",
		Store: s,
		Embed: func(g *Graph, ids, _ *gorgonia.Node) (*gorgonia.Node, error) { return wte.Forward(g, ids) },
		Stack: stack, Head: wte.Logits, Context: context,
		Graphs: &CausalGraphs{},
	}
}

// lastLogits runs lm over one row alone, unpadded at positions 0…n−1,
// with no cache, and returns its last position's logits.
func lastLogits(t *testing.T, lm *CausalLM, row []int) []float64 {
	t.Helper()
	g := lm.Store.NewGraph()
	ids, err := g.IntConstant("ids", row, 1, len(row))
	require.NoError(t, err)
	h, err := lm.Embed(g, ids, nil)
	require.NoError(t, err)
	h, err = lm.Stack.Forward(g, h, nil)
	require.NoError(t, err)
	logits, err := lm.Head(g, h)
	require.NoError(t, err)
	all := runRead(t, g, logits)[0].(*tensor.Dense).Data().([]float64)
	v := len(all) / len(row)
	return all[len(all)-v:]
}

// With rotary positions in every attention, decoding through the KV cache
// gives the logits of recomputing every row's whole context (the uncached
// stepper, and each row alone at positions 0…n−1) to 1e-6, at every step:
// rows of different lengths (left-padded, each counting positions from
// its first token), beam search's reordering of the cache rows between
// steps, and the steps past the context that leave the cache for the
// sliding window. The rotary encoder changes the logits, so the test
// measures something.
func TestRotaryCachedEqualsFull(t *testing.T) {
	const context, maxNew = 10, 9
	lm := rotaryLM(t, context, true)
	cached, err := lm.NewStepper(CausalOptions{MaxNewTokens: maxNew})
	require.NoError(t, err)
	defer cached.Close()
	full, err := lm.NewStepper(CausalOptions{MaxNewTokens: maxNew, NoCache: true})
	require.NoError(t, err)
	defer full.Close()

	seqs := [][]int{{5, 3, 9, 1}, {7}, {2, 8, 4}, {11, 6}}
	parents := [][]int{nil, {2, 0, 0, 3}, {0, 1, 2, 3}, {3, 3, 1, 0}, nil, {1, 0, 3, 2}, nil, nil, nil}
	for step := range maxNew {
		want, err := full.Step(seqs)
		require.NoError(t, err)
		want = clone2(want)
		got, err := cached.Step(seqs)
		require.NoError(t, err)
		for r := range seqs {
			require.InDeltaSlice(t, want[r], got[r], 1e-6, "step %d row %d", step, r)
			if len(seqs[r]) <= context {
				require.InDeltaSlice(t, lastLogits(t, lm, seqs[r]), got[r], 1e-6, "step %d row %d alone", step, r)
			}
		}
		next := make([][]int, len(seqs))
		p := parents[step]
		if p == nil {
			p = []int{0, 1, 2, 3}
		}
		for r := range seqs {
			next[r] = append(append([]int(nil), seqs[p[r]]...), (step*7+r*5+len(seqs[p[r]]))%24)
		}
		require.NoError(t, cached.Reorder(p))
		require.NoError(t, full.Reorder(p))
		seqs = next
	}
	require.Greater(t, len(seqs[1]), context, "the last steps ran the sliding window")

	plain := rotaryLM(t, context, false)
	row := []int{5, 3, 9, 1, 7}
	require.NotEqual(t, lastLogits(t, plain, row), lastLogits(t, lm, row), "rotary positions change the logits")
}

func clone2(x [][]float64) [][]float64 {
	out := make([][]float64, len(x))
	for i, r := range x {
		out[i] = append([]float64(nil), r...)
	}
	return out
}

// The stepper refuses a CausalLM without its parts, a non-causal stack,
// no new tokens and rows that change in number; a graph cache is reused
// by a second decoding of the same shapes.
func TestCausalStepperChecks(t *testing.T) {
	lm := rotaryLM(t, 10, true)
	for _, c := range []struct {
		edit func(*CausalLM)
		want string
	}{
		{func(l *CausalLM) { l.Head = nil }, "needs its Store, Embed, Stack and Head"},
		{func(l *CausalLM) { l.Context = 0 }, "context 0 must be positive"},
		{func(l *CausalLM) { l.Stack = &Encoder{} }, "no layers"},
		{func(l *CausalLM) { l.Stack = &Encoder{Layers: []*EncoderBlock{{}}} }, "not causal"},
	} {
		bad := *lm
		c.edit(&bad)
		_, err := bad.NewStepper(CausalOptions{MaxNewTokens: 1})
		require.ErrorContains(t, err, c.want)
	}
	_, err := lm.NewStepper(CausalOptions{})
	require.ErrorContains(t, err, "max new tokens 0")

	st, err := lm.NewStepper(CausalOptions{MaxNewTokens: 3})
	require.NoError(t, err)
	_, err = st.Step([][]int{{1, 2}, {3}})
	require.NoError(t, err)
	_, err = st.Step([][]int{{1, 2, 3}})
	require.ErrorContains(t, err, "has 1 rows, the first had 2")
	st.Close()
	n, _ := lm.Graphs.Builds()
	require.Equal(t, 1, n)
	st, err = lm.NewStepper(CausalOptions{MaxNewTokens: 3})
	require.NoError(t, err)
	_, err = st.Step([][]int{{4, 2}, {3, 9}})
	require.NoError(t, err)
	st.Close()
	n, _ = lm.Graphs.Builds()
	require.Equal(t, 1, n, "the second decoding reused the graphs")
	kept, _ := lm.Graphs.Len()
	require.Equal(t, 1, kept)
	lm.Graphs.Reset()
	kept, _ = lm.Graphs.Len()
	require.Zero(t, kept)

	st, err = lm.NewStepper(CausalOptions{MaxNewTokens: 3, NoSlidingWindow: true})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Step([][]int{make([]int, 11)})
	require.ErrorContains(t, err, "more than the model's 10 positions, and the sliding window is off")
}

// Every decoding graph, the prefill's, the single token's and the
// uncached step's, hands the head only each row's last position
// (B, 1, D): the logits of the others would go unread. The logits stay
// those of the whole context's last position (TestRotaryCachedEqualsFull
// checks them at every step; here the prefill and an uncached step of
// rows of different lengths, in float64, equal to 1e-12).
func TestCausalHeadSeesLastPosition(t *testing.T) {
	lm := rotaryLM(t, 16, true)
	head := lm.Head
	var widths []int
	lm.Head = func(g *Graph, h *gorgonia.Node) (*gorgonia.Node, error) {
		widths = append(widths, h.Shape()[1])
		return head(g, h)
	}
	seqs := [][]int{{5, 3, 9, 1, 7, 2}, {7, 4}, {2, 8, 4}}
	for _, noCache := range []bool{false, true} {
		widths = widths[:0]
		st, err := lm.NewStepper(CausalOptions{MaxNewTokens: 3, NoCache: noCache})
		require.NoError(t, err)
		got, err := st.Step(seqs)
		require.NoError(t, err)
		require.NotEmpty(t, widths, "no cache %v: the graphs were built", noCache)
		for _, w := range widths {
			require.Equal(t, 1, w, "no cache %v: the head's positions", noCache)
		}
		for r, row := range seqs {
			require.InDeltaSlice(t, lastLogits(t, lm, row), got[r], 1e-12, "no cache %v, row %d", noCache, r)
		}
		st.Close()
		lm.Graphs.Reset()
	}
}

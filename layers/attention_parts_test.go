package layers

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// runNodes runs g and returns the values of nodes, copied.
func runNodes(t *testing.T, g *Graph, nodes ...*gorgonia.Node) [][]float64 {
	t.Helper()
	vals := make([]gorgonia.Value, len(nodes))
	for i, n := range nodes {
		gorgonia.Read(n, &vals[i])
	}
	m := gorgonia.NewTapeMachine(g.ExprGraph)
	defer m.Close()
	require.NoError(t, m.RunAll())
	out := make([][]float64, len(nodes))
	for i, v := range vals {
		out[i] = append([]float64(nil), v.(*tensor.Dense).Data().([]float64)...)
	}
	return out
}

// copyRows sets rows of dst, a (rows, cols) or (rows) parameter, to rows
// of src: dst row r is src row from(r).
func copyRows(dst, src *Param, from func(r int) int) {
	d, s := dst.Value.Data().([]float64), src.Value.Data().([]float64)
	cols := 1
	if dst.Value.Dims() == 2 {
		cols = dst.Value.Shape()[1]
	}
	for r := 0; r < dst.Value.Shape()[0]; r++ {
		copy(d[r*cols:(r+1)*cols], s[from(r)*cols:(from(r)+1)*cols])
	}
}

// Grouped-query attention (KVHeads < Heads) equals multi-head attention
// whose key and value heads repeat each key-value head Heads/KVHeads times
// in a row, bit for bit, fused and unfused, causal or not; the key and
// value projections are (KVHeads·d_head, Dim), and a KV cache holds
// KVHeads heads.
func TestAttentionGroupedQuery(t *testing.T) {
	const b, tl, d, h, kvh, dh = 2, 5, 8, 4, 2, 3
	s := newStore64(t)
	gqa, err := NewMultiHeadAttention(s.Root().Sub("gqa"), AttentionConfig{Dim: d, Heads: h, KVHeads: kvh, HeadDim: dh, Bias: true})
	require.NoError(t, err)
	mha, err := NewMultiHeadAttention(s.Root().Sub("mha"), AttentionConfig{Dim: d, Heads: h, HeadDim: dh, Bias: true})
	require.NoError(t, err)
	require.Equal(t, []int{kvh * dh, d}, []int(gqa.Key.Weight.Value.Shape()))
	require.Equal(t, []int{h * dh, d}, []int(gqa.Query.Weight.Value.Shape()))
	require.Equal(t, []int{d, h * dh}, []int(gqa.Out.Weight.Value.Shape()))
	require.Equal(t, []int{b * kvh, 7, dh}, gqa.CacheShape(b, 7))
	same := func(r int) int { return r }
	group := func(r int) int { return (r/dh)/(h/kvh)*dh + r%dh } // query head r/dh reads key-value head (r/dh)/(h/kvh)
	for _, p := range []struct {
		dst, src *Linear
		from     func(int) int
	}{{mha.Query, gqa.Query, same}, {mha.Out, gqa.Out, same}, {mha.Key, gqa.Key, group}, {mha.Value, gqa.Value, group}} {
		copyRows(p.dst.Weight, p.src.Weight, p.from)
		if p.dst == mha.Out {
			copy(p.dst.Bias.Value.Data().([]float64), p.src.Bias.Value.Data().([]float64))
		} else {
			copyRows(p.dst.Bias, p.src.Bias, p.from)
		}
	}
	for _, causal := range []bool{false, true} {
		g := s.NewGraph()
		x := randInput(g, "x", 1, b, tl, d)
		mask := keyMask(g, b, tl, [2]int{1, 4})
		want, err := mha.Forward(g, x, nil, mask, causal)
		require.NoError(t, err)
		got, err := gqa.Forward(g, x, nil, mask, causal)
		require.NoError(t, err)
		require.Equal(t, 2, fusedAttentions(g))
		wantOut, wantProbs, err := mha.ForwardWithProbs(g, x, nil, mask, causal)
		require.NoError(t, err)
		gotOut, gotProbs, err := gqa.ForwardWithProbs(g, x, nil, mask, causal)
		require.NoError(t, err)
		v := runNodes(t, g, want, got, wantOut, gotOut, wantProbs, gotProbs)
		require.Equal(t, v[0], v[1], "fused, causal %v", causal)
		require.Equal(t, v[2], v[3], "unfused, causal %v", causal)
		require.Equal(t, v[4], v[5], "probabilities, causal %v", causal)
	}

	_, err = NewMultiHeadAttention(s.Root().Sub("bad"), AttentionConfig{Dim: d, Heads: h, KVHeads: 3})
	require.ErrorContains(t, err, "3 key-value heads must divide 4 heads")
	_, err = NewMultiHeadAttention(s.Root().Sub("bad"), AttentionConfig{Dim: d, Heads: h, KVHeads: kvh, FusedQKV: true})
	require.ErrorContains(t, err, "fused query-key-value projection needs as many key-value heads as heads")
	_, err = NewMultiHeadAttention(s.Root().Sub("bad"), AttentionConfig{Dim: d, Heads: h, HeadDim: -1})
	require.ErrorContains(t, err, "head width -1 must be positive")
}

// AttentionConfig.NoBias drops the marked projections' biases from the
// store, alone or through BlockConfig.AttentionNoBias; a fused projection
// has one bias, which NoBias must mark for query, key and value alike.
func TestAttentionNoBias(t *testing.T) {
	names := func(c AttentionConfig) []string {
		s, err := NewStore()
		require.NoError(t, err)
		_, err = NewMultiHeadAttention(s.Root(), c)
		require.NoError(t, err)
		var n []string
		for _, p := range s.Params() {
			n = append(n, p.Name)
		}
		return n
	}
	all := []string{"q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias", "v_proj.weight", "v_proj.bias", "out_proj.weight", "out_proj.bias"}
	require.Equal(t, all, names(AttentionConfig{Dim: 4, Heads: 2, Bias: true}))
	require.Equal(t, []string{"q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias", "v_proj.weight", "v_proj.bias", "out_proj.weight"},
		names(AttentionConfig{Dim: 4, Heads: 2, Bias: true, NoBias: AttentionBiases{Out: true}}))
	require.Equal(t, []string{"q_proj.weight", "q_proj.bias", "k_proj.weight", "v_proj.weight", "v_proj.bias", "out_proj.weight", "out_proj.bias"},
		names(AttentionConfig{Dim: 4, Heads: 2, Bias: true, NoBias: AttentionBiases{Key: true}}))
	require.Equal(t, []string{"c_attn.weight", "c_proj.weight", "c_proj.bias"},
		names(AttentionConfig{Dim: 4, Heads: 2, Bias: true, FusedQKV: true, NoBias: AttentionBiases{Query: true, Key: true, Value: true}}))
	s, err := NewStore()
	require.NoError(t, err)
	_, err = NewMultiHeadAttention(s.Root(), AttentionConfig{Dim: 4, Heads: 2, Bias: true, FusedQKV: true, NoBias: AttentionBiases{Key: true}})
	require.ErrorContains(t, err, "must mark query, key and value alike")

	cfg := BlockConfig{Dim: 4, Heads: 2, FFNDim: 8, Activation: "gelu", Norm: PreNorm, LayerNormEps: 1e-5, Bias: true,
		AttentionNoBias: AttentionBiases{Query: true, Out: true}}
	d, err := NewDecoderBlock(s.Root().Sub("d"), cfg)
	require.NoError(t, err)
	for _, a := range []*MultiHeadAttention{d.SelfAttn, d.CrossAttn} {
		require.Nil(t, a.Query.Bias)
		require.Nil(t, a.Out.Bias)
		require.NotNil(t, a.Key.Bias)
		require.NotNil(t, a.Value.Bias)
	}
	_, ok := s.Param("d.self_attn.out_proj.bias")
	require.False(t, ok)
}

// swapKeyHalves is a PositionEncoder that swaps the halves of each key
// head (not the queries, so the scores change) and records the first
// query and key positions it is given (constants, without given
// positions).
type swapKeyHalves struct{ starts *[][2]int }

func (p swapKeyHalves) Apply(g *Graph, q, k, qPos, kPos *gorgonia.Node) (*gorgonia.Node, *gorgonia.Node, error) {
	*p.starts = append(*p.starts, [2]int{qPos.Value().Data().([]int)[0], kPos.Value().Data().([]int)[0]})
	half := k.Shape()[2] / 2
	lo, err := gorgonia.Slice(k, nil, nil, gorgonia.S(0, half))
	if err != nil {
		return nil, nil, err
	}
	hi, err := gorgonia.Slice(k, nil, nil, gorgonia.S(half, k.Shape()[2]))
	if err != nil {
		return nil, nil, err
	}
	k, err = gorgonia.Concat(2, hi, lo)
	return q, k, err
}

// AttentionConfig.Positions is applied to the projected query and key
// heads: an encoder that swaps the halves of the key heads changes the
// attention probabilities, the attention still runs fused without
// probabilities, a causal attention's queries start at Tk−Tq, and only a
// block's self-attention gets the encoder. Projected keys refuse it, and
// so does a KV cache that does not give the tokens' positions (see
// TestRotaryCachedEqualsFull for one that does).
func TestAttentionPositions(t *testing.T) {
	const b, tl, d = 2, 5, 8
	s := newStore64(t)
	plain, err := NewMultiHeadAttention(s.Root().Sub("a"), AttentionConfig{Dim: d, Heads: 2})
	require.NoError(t, err)
	var starts [][2]int
	swapped := *plain
	swapped.Positions = swapKeyHalves{&starts}
	g := s.NewGraph()
	x := randInput(g, "x", 1, b, tl, d)
	_, want, err := plain.ForwardWithProbs(g, x, nil, nil, false)
	require.NoError(t, err)
	_, got, err := swapped.ForwardWithProbs(g, x, nil, nil, false)
	require.NoError(t, err)
	_, err = swapped.Forward(g, x, nil, nil, true)
	require.NoError(t, err)
	require.Equal(t, 1, fusedAttentions(g), "the fused kernel still runs")
	_, err = swapped.Forward(g, randInput(g, "x2", 2, b, 2, d), x, nil, true)
	require.NoError(t, err)
	require.Equal(t, [][2]int{{0, 0}, {0, 0}, {tl - 2, 0}}, starts)
	// Given positions reach the encoder, queries' and keys' alike.
	at := make([]int, b*tl)
	for i := range at {
		at[i] = 7 + i
	}
	pos, err := g.IntConstant("positions", at, b, tl)
	require.NoError(t, err)
	_, err = swapped.ForwardAt(g, x, nil, pos, true)
	require.NoError(t, err)
	require.Equal(t, [2]int{7, 7}, starts[3])
	_, err = swapped.ForwardAt(g, x, nil, g.IntInput("short", b, tl-1), true)
	require.ErrorContains(t, err, "must be int (B, T)")
	starts = starts[:3]
	v := runNodes(t, g, want, got)
	require.NotEqual(t, v[0], v[1], "the encoder changes the scores")

	_, err = swapped.ProjectKV(g, x)
	require.ErrorContains(t, err, "take no position encoder")
	c := &KVCache{K: g.Input("k", plain.CacheShape(b, 7)...), V: g.Input("v", plain.CacheShape(b, 7)...), Slot: g.IntInput("slot", 1)}
	_, err = swapped.ForwardCached(g, x, g.Input("m", b, 7), c)
	require.ErrorContains(t, err, "needs the tokens' positions", "a cache without positions")

	cfg := BlockConfig{Dim: d, Heads: 2, FFNDim: 8, Activation: "gelu", Norm: PreNorm, LayerNormEps: 1e-5, Positions: swapKeyHalves{&starts}}
	db, err := NewDecoderBlock(s.Root().Sub("d"), cfg)
	require.NoError(t, err)
	require.NotNil(t, db.SelfAttn.Positions)
	require.Nil(t, db.CrossAttn.Positions)

	// A causal stack hands every layer's self-attention the positions.
	cfg.Causal = true
	enc, err := NewEncoder(s.Root().Sub("e"), cfg, 2)
	require.NoError(t, err)
	starts = nil
	_, err = enc.ForwardAt(g, x, nil, pos)
	require.NoError(t, err)
	require.Equal(t, [][2]int{{7, 7}, {7, 7}}, starts)
}

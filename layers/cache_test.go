package layers

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Running a causal stack through KV caches, a 3-token prefill then one token
// at a time, gives the outputs of one full forward over the sequence.
func TestKVCacheMatchesFullForward(t *testing.T) {
	const b, total, prefill, capacity, d = 2, 6, 3, 8, 8
	s := newStore64(t)
	cfg := BlockConfig{Dim: d, Heads: 2, FFNDim: 16, Activation: "gelu_new", Norm: PreNorm, LayerNormEps: 1e-5,
		Bias: true, Causal: true, FusedQKV: true}
	enc, err := NewEncoder(s.Root(), cfg, 2)
	require.NoError(t, err)
	// Row 1 has a padded first token (left padding).
	keep := []float64{1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1}

	full := s.NewGraph()
	x := randInput(full, "x", 5, b, total, d)
	fm, err := full.Constant("mask", keep, b, total)
	require.NoError(t, err)
	y, err := enc.Forward(full, x, fm)
	require.NoError(t, err)
	want := runRead(t, full, y)[0].(*tensor.Dense).Data().([]float64)
	xs := x.Value().Data().([]float64)

	// Persistent caches, shared by the prefill graph and the step graph.
	var ks, vs []*tensor.Dense
	for _, l := range enc.Layers {
		shape := l.SelfAttn.CacheShape(b, capacity)
		ks = append(ks, tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float64)))
		vs = append(vs, tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float64)))
	}
	run := func(from, n int) []float64 {
		g := s.NewGraph()
		chunk := make([]float64, 0, b*n*d)
		for bi := 0; bi < b; bi++ {
			chunk = append(chunk, xs[(bi*total+from)*d:(bi*total+from+n)*d]...)
		}
		xn := g.Bind("x", tensor.New(tensor.WithShape(b, n, d), tensor.WithBacking(chunk)))
		occupied := make([]float64, b*capacity)
		for bi := 0; bi < b; bi++ {
			for j := 0; j < from+n; j++ {
				occupied[bi*capacity+j] = keep[bi*total+j]
			}
		}
		mask, err := g.Constant("occupied", occupied, b, capacity)
		require.NoError(t, err)
		slot, err := g.IntConstant("slot", []int{from}, 1)
		require.NoError(t, err)
		var caches []*KVCache
		for i := range enc.Layers {
			caches = append(caches, &KVCache{K: g.Bind("k", ks[i]), V: g.Bind("v", vs[i]), Slot: slot})
		}
		y, err := enc.ForwardCached(g, xn, mask, caches)
		require.NoError(t, err)
		return runRead(t, g, y)[0].(*tensor.Dense).Data().([]float64)
	}
	got := make([]float64, len(want))
	place := func(from, n int, out []float64) {
		for bi := 0; bi < b; bi++ {
			copy(got[(bi*total+from)*d:(bi*total+from+n)*d], out[bi*n*d:(bi+1)*n*d])
		}
	}
	place(0, prefill, run(0, prefill))
	for p := prefill; p < total; p++ {
		place(p, 1, run(p, 1))
	}
	// Row 1's padded position attends to nothing of its own and is not
	// compared; every real position must agree.
	for i := range want {
		if keep[i/d] == 0 {
			continue
		}
		require.InDelta(t, want[i], got[i], 1e-12, "element %d", i)
	}

	_, err = enc.Layers[0].SelfAttn.ForwardCached(s.NewGraph(), x, nil, nil)
	require.ErrorContains(t, err, "incomplete KV cache")
	post := cfg
	post.Causal = false
	b2, err := NewEncoderBlock(s.Root().Sub("nc"), post)
	require.NoError(t, err)
	_, err = b2.ForwardCached(s.NewGraph(), x, nil, &KVCache{})
	require.ErrorContains(t, err, "needs a causal block")
	_ = gorgonia.Nodes{}
}

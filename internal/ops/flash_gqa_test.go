package ops

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/gradcheck"
)

// repeatHeads is Hugging Face's repeat_kv on nodes: x (B·kvh, T, d) to
// (B·kvh·r, T, d), each head repeated r times in a row.
func repeatHeads(x *gorgonia.Node, r int) (*gorgonia.Node, error) {
	s := x.Shape()
	flat, err := gorgonia.Reshape(x, []int{s[0], 1, s[1] * s[2]})
	if err != nil {
		return nil, err
	}
	copies := make([]*gorgonia.Node, r)
	for i := range copies {
		copies[i] = flat
	}
	rep, err := gorgonia.Concat(1, copies...)
	if err != nil {
		return nil, err
	}
	return gorgonia.Reshape(rep, []int{s[0] * r, s[1], s[2]})
}

// gqaCase is a flashCase with kvh key-value heads: its refCase's composed
// side repeats them (repeatHeads) and attends unfused, its fused side
// gives the fused kernel the kvh heads.
func gqaCase(c flashCase, kvh int) refCase {
	rc := c.refCase()
	r := c.h / kvh
	rc.name = fmt.Sprintf("%s_kvh%d", rc.name, kvh)
	rc.inputs[1] = randDense(12, c.b*kvh, c.tk, c.d)
	rc.inputs[2] = randDense(13, c.b*kvh, c.tk, c.d)
	scale := 1 / math.Sqrt(float64(c.d))
	split := func(in []*gorgonia.Node) (q, k, v, mask *gorgonia.Node) {
		if len(in) == 4 {
			mask = in[3]
		}
		return in[0], in[1], in[2], mask
	}
	rc.fused = func(in []*gorgonia.Node) (*gorgonia.Node, error) {
		q, k, v, mask := split(in)
		return Attention(q, k, v, mask, scale, c.offset)
	}
	rc.composed = func(in []*gorgonia.Node) (*gorgonia.Node, error) {
		q, k, v, mask := split(in)
		kr, err := repeatHeads(k, r)
		if err != nil {
			return nil, err
		}
		vr, err := repeatHeads(v, r)
		if err != nil {
			return nil, err
		}
		return unfusedAttention(q, kr, vr, mask, scale, c.offset)
	}
	return rc
}

// Grouped-query attention in the fused kernel: keys and values of kvh
// heads (each serving h/kvh query heads in a row) give the values and the
// gradients of the composition that repeats them first, in every tiling
// and both backward work splits, and pass finite differences. (Seen to
// fail with query head z reading key-value head z % kvh instead of
// z/(h/kvh), and with the part ops copying a group's first head instead of
// summing.)
func TestAttentionGroupedQueryHeads(t *testing.T) {
	cases := []struct {
		c   flashCase
		kvh int
	}{
		{flashCase{b: 2, h: 4, tq: 7, tk: 7, d: 4, offset: 0, mask: "pad"}, 2},
		{flashCase{b: 2, h: 4, tq: 1, tk: 9, d: 3, offset: NoCausal, mask: "late"}, 1},
		{flashCase{b: 1, h: 6, tq: 70, tk: 133, d: 16, offset: 63, mask: "none"}, 2},
		{flashCase{b: 2, h: 3, tq: 5, tk: 5, d: 2, offset: NoCausal, mask: "empty"}, 3},
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tol := 1e-10
		if dt == tensor.Float32 {
			tol = 1e-5
		}
		for _, gc := range cases {
			rc := gqaCase(gc.c, gc.kvh)
			want := runRef(t, rc, dt, rc.composed)
			for _, tl := range flashTilings {
				t.Run(fmt.Sprintf("%v/%s/%s", dt, rc.name, tl.name), func(t *testing.T) {
					var got refResult
					withTiles(tl, func() { got = runRef(t, rc, dt, rc.fused) })
					requireClose(t, want.out, got.out, tol, "value")
					for i, w := range want.grads {
						requireClose(t, w, got.grads[i], tol, fmt.Sprintf("gradient of %s", []string{"q", "k", "v"}[i]))
					}
				})
			}
		}
	}
	rc := gqaCase(flashCase{b: 2, h: 4, tq: 4, tk: 6, d: 3, offset: 2, mask: "pad"}, 2)
	requireGrad(t, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
		in := make([]*gorgonia.Node, len(rc.inputs))
		for i, v := range rc.inputs {
			in[i] = input(g, fmt.Sprintf("in%d", i), v.Clone().(*tensor.Dense))
		}
		out, err := rc.fused(in)
		return out, in[:3], err
	}, gradcheck.Options{})

	g := gorgonia.NewGraph()
	q, k := input(g, "q", randDense(1, 6, 2, 3)), input(g, "k", randDense(2, 4, 2, 3))
	_, err := Attention(q, k, k, nil, 1, NoCausal)
	require.ErrorContains(t, err, "Nk dividing N")
}

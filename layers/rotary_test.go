package layers

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Rotary equals transformers' LlamaRotaryEmbedding and apply_rotary_pos_emb
// (tools/pytorch/golden_layers.py's rotary case, 4 query and 2 key heads,
// positions up to 4000): in float64 the outputs and the gradients of
// Σ q_embed ⊙ r_q + Σ k_embed ⊙ r_k to 1e-12, and in float32, where
// transformers rounds the frequencies, angles and cosines to float32 too,
// to a float32 rounding.
func TestGoldenRotary(t *testing.T) {
	gd := loadGolden(t, "rotary")
	r, err := NewRotary(8, 10000)
	require.NoError(t, err)
	pf := gd.dense("in.position_ids")
	pos := make([]int, pf.Size())
	for i, v := range pf.Data().([]float64) {
		pos[i] = int(v)
	}

	s := newStore64(t)
	g := s.NewGraph()
	q, k := gd.constant(g, "in.q"), gd.constant(g, "in.k")
	p, err := g.IntConstant("position_ids", pos, pf.Shape()...)
	require.NoError(t, err)
	qe, ke, err := r.Apply(g, q, k, p, p)
	require.NoError(t, err)
	var terms []*gorgonia.Node
	for _, c := range []struct {
		y *gorgonia.Node
		r string
	}{{qe, "in.r_q"}, {ke, "in.r_k"}} {
		prod, err := gorgonia.HadamardProd(c.y, gd.constant(g, c.r))
		require.NoError(t, err)
		sum, err := gorgonia.Sum(prod)
		require.NoError(t, err)
		terms = append(terms, sum)
	}
	loss, err := gorgonia.Add(terms[0], terms[1])
	require.NoError(t, err)
	grads, err := gorgonia.Grad(loss, q, k)
	require.NoError(t, err)
	v := runRead(t, g, qe, ke, grads[0], grads[1])
	for i, name := range []string{"out.q", "out.k", "grad.q", "grad.k"} {
		requireClose(t, name, gd.dense(name), v[i].(*tensor.Dense), 1e-12)
	}

	s32, err := NewStore(WithDtype(tensor.Float32))
	require.NoError(t, err)
	g32 := s32.NewGraph()
	var in32 []*gorgonia.Node
	for _, name := range []string{"in.q", "in.k"} {
		d := gd.dense(name)
		f := make([]float32, d.Size())
		for i, x := range d.Data().([]float64) {
			f[i] = float32(x)
		}
		in32 = append(in32, g32.Bind(name, tensor.New(tensor.WithShape(d.Shape()...), tensor.WithBacking(f))))
	}
	p32, err := g32.IntConstant("position_ids", pos, pf.Shape()...)
	require.NoError(t, err)
	qe32, ke32, err := r.Apply(g32, in32[0], in32[1], p32, p32)
	require.NoError(t, err)
	v32 := runRead(t, g32, qe32, ke32)
	for i, name := range []string{"out.q32", "out.k32"} {
		want := gd.dense(name).Data().([]float64)
		got := v32[i].(*tensor.Dense).Data().([]float32)
		for j := range want {
			require.InDelta(t, want[j], float64(got[j]), 1e-6, "%s[%d]", name, j)
		}
	}
}

// Rotary refuses widths and bases it cannot use, heads of another width
// and positions that do not fit the heads.
func TestRotaryErrors(t *testing.T) {
	for _, c := range []struct {
		d     int
		theta float64
		want  string
	}{{7, 10000, "even"}, {0, 10000, "even"}, {8, 1, "more than 1"}, {8, 0, "more than 1"}} {
		_, err := NewRotary(c.d, c.theta)
		require.ErrorContains(t, err, c.want)
	}
	r, err := NewRotary(4, 10000)
	require.NoError(t, err)
	g := newStore64(t).NewGraph()
	q, k := g.Input("q", 4, 3, 4), g.Input("k", 2, 3, 4)
	pos := g.IntInput("pos", 2, 3)
	_, _, err = r.Apply(g, g.Input("q8", 4, 3, 8), k, pos, pos)
	require.ErrorContains(t, err, "(N, T, 4)")
	_, _, err = r.Apply(g, q, k, g.IntInput("p", 3, 3), pos)
	require.ErrorContains(t, err, "must be (B·h, T, d) and (B, T)")
	_, _, err = r.Apply(g, q, k, pos, g.IntInput("p2", 2, 2))
	require.ErrorContains(t, err, "keys")

	neg, err := g.IntConstant("negative", []int{0, 1, 2, 0, -1, 2}, 2, 3)
	require.NoError(t, err)
	qe, _, err := r.Apply(g, q, k, neg, pos)
	require.NoError(t, err)
	_, err = g.Evaluate(qe)
	require.ErrorContains(t, err, "position 4 is negative")
}

// Rotary with inverse frequencies given (NewRotaryFreqs) equals the
// base's rotation bit for bit when they are the base's (float64), turns
// each pair by position·InvFreq[i] when they are not (a direct computation,
// 1e-15), its gradient rotating back; it refuses frequencies that do not
// fit the heads. (Seen to fail with the base's frequencies used whatever
// InvFreq held.)
func TestRotaryFreqs(t *testing.T) {
	const d = 8
	base, err := NewRotary(d, 10000)
	require.NoError(t, err)
	inv := make([]float64, d/2)
	for i := range inv {
		inv[i] = 1 / math.Pow(10000, float64(2*i)/d)
	}
	same, err := NewRotaryFreqs(d, inv)
	require.NoError(t, err)
	scaled := []float64{1, 0.3, 0.01 / 8, 1e-4 / 8}
	sc, err := NewRotaryFreqs(d, scaled)
	require.NoError(t, err)
	run := func(r *Rotary) (qe, gq []float64, q []float64, pos []int) {
		s := newStore64(t)
		g := s.NewGraph()
		qn := randInput(g, "q", 3, 2*2, 5, d) // B=2, h=2, T=5
		pos = []int{0, 1, 2, 3, 4, 0, 0, 7, 100, 4000}
		p, err := g.IntConstant("pos", pos, 2, 5)
		require.NoError(t, err)
		out, _, err := r.Apply(g, qn, qn, p, p)
		require.NoError(t, err)
		sum, err := gorgonia.Sum(out)
		require.NoError(t, err)
		grads, err := gorgonia.Grad(sum, qn)
		require.NoError(t, err)
		v := runRead(t, g, out, grads[0], qn)
		return v[0].(*tensor.Dense).Data().([]float64), v[1].(*tensor.Dense).Data().([]float64), v[2].(*tensor.Dense).Data().([]float64), pos
	}
	wq, wg, _, _ := run(base)
	gq, gg, _, _ := run(same)
	require.Equal(t, wq, gq, "the base's frequencies given: the same rotation, bit for bit")
	require.Equal(t, wg, gg)

	out, grad, q, pos := run(sc)
	for bh := range 4 {
		for j := range 5 {
			p := float64(pos[(bh/2)*5+j])
			row := (bh*5 + j) * d
			for i := range d / 2 {
				c, s := math.Cos(p*scaled[i]), math.Sin(p*scaled[i])
				x1, x2 := q[row+i], q[row+i+d/2]
				require.InDelta(t, x1*c-x2*s, out[row+i], 1e-15)
				require.InDelta(t, x2*c+x1*s, out[row+i+d/2], 1e-15)
				require.InDelta(t, c+s, grad[row+i], 1e-15) // d/dx1 of Σ: cos + sin
				require.InDelta(t, c-s, grad[row+i+d/2], 1e-15)
			}
		}
	}

	for _, c := range []struct {
		inv  []float64
		want string
	}{{[]float64{1, 2}, "2 inverse frequencies for heads of width 8; need 4"},
		{[]float64{1, 0, 1, 1}, "inverse frequency 1 is 0"},
		{[]float64{1, 1, math.Inf(1), 1}, "inverse frequency 2 is +Inf"},
		{[]float64{1, 1, 1, math.NaN()}, "inverse frequency 3 is NaN"}} {
		_, err := NewRotaryFreqs(d, c.inv)
		require.ErrorContains(t, err, c.want)
	}
}

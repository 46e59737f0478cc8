package ops

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/gradcheck"
	"github.com/d73a19ff/zoo/internal/graphtest"
)

// maskDense builds a (B, Tk) key mask of ones with the given (b, k) zeroed.
func maskDense(b, tk int, padded ...[2]int) *tensor.Dense {
	m := make([]float64, b*tk)
	for i := range m {
		m[i] = 1
	}
	for _, p := range padded {
		m[p[0]*tk+p[1]] = 0
	}
	return tensor.New(tensor.WithShape(b, tk), tensor.WithBacking(m))
}

func TestGradients(t *testing.T) {
	cases := []struct {
		name  string
		build gradcheck.Build
	}{
		{"layernorm", func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
			x, w, b := input(g, "x", randDense(1, 2, 3, 6)), input(g, "w", randDense(2, 6)), input(g, "b", randDense(3, 6))
			y, err := LayerNorm(x, w, b, 1e-5)
			return y, gorgonia.Nodes{x, w, b}, err
		}},
		{"layernorm_nobias", func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
			x, w := input(g, "x", randDense(1, 4, 5)), input(g, "w", randDense(2, 5))
			y, err := LayerNorm(x, w, nil, 1e-6)
			return y, gorgonia.Nodes{x, w}, err
		}},
		{"relu", actCase(ReLU)},
		{"gelu", actCase(GELU)},
		{"gelu_tanh", actCase(GELUTanh)},
		{"silu", actCase(SiLU)},
		{"softmax", softmaxCase(false, nil, 3)},
		{"softmax_causal", softmaxCase(true, nil, 3)},
		{"softmax_padding", softmaxCase(false, maskDense(2, 5, [2]int{1, 3}, [2]int{1, 4}), 3)},
		{"softmax_both", softmaxCase(true, maskDense(2, 5, [2]int{0, 0}, [2]int{1, 4}), 3)},
		{"softmax_causal_square", softmaxCase(true, maskDense(2, 5, [2]int{1, 2}), 5)},
		{"cross_entropy", xentCase(0.1, []int{6}, []int{0, 4, -100, 3, 1, -100})},
		{"cross_entropy_nosmooth_3d", xentCase(0, []int{2, 3}, []int{1, -100, 4, 0, 2, 2})},
		{"distill_cross_entropy", distillCase(0.1, 0.4, []int{6}, []int{0, 4, -100, 3, 1, -100})},
		{"distill_cross_entropy_all_teacher_3d", distillCase(0, 1, []int{2, 3}, []int{1, -100, 4, 0, 2, 2})},
		{"gather", func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
			tab := input(g, "table", randDense(1, 5, 3))
			y, err := Gather(tab, intInput(g, "ids", []int{2, 3}, []int{0, 4, 4, 1, 0, 2}))
			return y, gorgonia.Nodes{tab}, err
		}},
		{"split_heads", func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
			x := input(g, "x", randDense(1, 2, 3, 6))
			y, err := SplitHeads(x, 3)
			return y, gorgonia.Nodes{x}, err
		}},
		{"merge_heads", func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
			x := input(g, "x", randDense(1, 4, 3, 2))
			y, err := MergeHeads(x, 2)
			return y, gorgonia.Nodes{x}, err
		}},
		{"add_broadcast", func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
			x, p := input(g, "x", randDense(1, 2, 3, 4)), input(g, "p", randDense(2, 3, 4))
			y, err := AddBroadcast(x, p)
			return y, gorgonia.Nodes{x, p}, err
		}},
		{"patchify", func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
			x := input(g, "img", randDense(1, 2, 2, 4, 6))
			y, err := Patchify(x, 2)
			return y, gorgonia.Nodes{x}, err
		}},
	}
	for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		tA, tB := tr[0], tr[1]
		cases = append(cases, struct {
			name  string
			build gradcheck.Build
		}{"bmm", func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
			as, bs := []int{3, 2, 4}, []int{3, 4, 5}
			if tA {
				as = []int{3, 4, 2}
			}
			if tB {
				bs = []int{3, 5, 4}
			}
			a, b := input(g, "a", randDense(1, as...)), input(g, "b", randDense(2, bs...))
			y, err := BatchedMatMul(a, b, tA, tB)
			return y, gorgonia.Nodes{a, b}, err
		}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { requireGrad(t, c.build, gradcheck.Options{}) })
	}
}

func actCase(a Act) gradcheck.Build {
	return func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := input(g, "x", randDense(4, 3, 7))
		y, err := Activate(x, a)
		return y, gorgonia.Nodes{x}, err
	}
}

func softmaxCase(causal bool, mask *tensor.Dense, tq int) gradcheck.Build {
	return func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
		s := input(g, "s", randDense(5, 4, tq, 5)) // B=2, h=2
		var m *gorgonia.Node
		if mask != nil {
			m = input(g, "mask", mask)
		}
		y, err := MaskedSoftmax(s, m, 0.7, causal)
		return y, gorgonia.Nodes{s}, err
	}
}

func xentCase(smoothing float64, lead []int, targets []int) gradcheck.Build {
	return func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
		l := input(g, "logits", randDense(6, append(append([]int{}, lead...), 5)...))
		y, err := CrossEntropy(l, intInput(g, "targets", lead, targets), -100, smoothing)
		return y, gorgonia.Nodes{l}, err
	}
}

// distillCase is DistillCrossEntropy on random logits and a random
// teacher (rows of a softmax), differentiated with respect to the logits.
func distillCase(smoothing, alpha float64, lead []int, targets []int) gradcheck.Build {
	return func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
		shape := append(append([]int{}, lead...), 5)
		l := input(g, "logits", randDense(6, shape...))
		q := randDense(8, shape...)
		normalisedRows(q.Data().([]float64), 5)
		y, err := DistillCrossEntropy(l, intInput(g, "targets", lead, targets), input(g, "teacher", q), -100, smoothing, alpha)
		return y, gorgonia.Nodes{l}, err
	}
}

func normalisedRows(x []float64, v int) {
	for r := 0; r < len(x); r += v {
		var sum float64
		for j := r; j < r+v; j++ {
			x[j] = math.Exp(x[j])
			sum += x[j]
		}
		for j := r; j < r+v; j++ {
			x[j] /= sum
		}
	}
}

// DistillCrossEntropy against PyTorch: (1−α)·F.cross_entropy(logits, t,
// label_smoothing=ε, ignore_index=-100) + α·F.cross_entropy(logits[keep],
// q[keep]) with ε 0.1, α 0.4, and its gradient (torch 2.x, float64; the
// fourth teacher row has zeros, the third row is ignored).
func TestDistillCrossEntropyValues(t *testing.T) {
	logits := []float64{0.3, -1.2, 2.0, 0.5, -0.7, 1.1, 0.2, -0.4, 0.0, 0.9, 0.5, 0.5, 0.5, -2.0, 1.5, -0.3, 0.8, 0.1, 1.7, -1.1}
	q := []float64{0.1, 0.05, 0.7, 0.1, 0.05, 0.6, 0.1, 0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.2, 0.2, 0.0, 0.3, 0.0, 0.7, 0.0}
	targets := []int{2, 4, -100, 3}
	wantGrad := []float64{0.022893418019668207, -0.0016908651950203715, -0.057134212686911996, 0.031799731721046075, 0.004131928141218094, 0.03584796130780559, 0.03139321151618567, 0.00940836146674014, 0.022560587426201425, -0.09921012171693286, 0, 0, 0, 0, 0, 0.0209980455566142, 0.03109827912624548, 0.033292701754118685, -0.09262137235188697, 0.007232345914908573}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		g := gorgonia.NewGraph()
		l := input(g, "l", tensor.New(tensor.WithShape(4, 5), tensor.WithBacking(castTo(dt, logits))))
		y, err := DistillCrossEntropy(l, intInput(g, "t", []int{4}, targets), input(g, "q", tensor.New(tensor.WithShape(4, 5), tensor.WithBacking(castTo(dt, q)))), -100, 0.1, 0.4)
		require.NoError(t, err)
		grads, err := gorgonia.Grad(y, l)
		require.NoError(t, err)
		v := graphtest.Run(t, g, y, grads[0])
		tol := 1e-12
		if dt == tensor.Float32 {
			tol = 1e-6
		}
		require.InDelta(t, 0.9596917152149786, floatsOf(t, v[0])[0], tol, dt.String())
		require.InDeltaSlice(t, wantGrad, floatsOf(t, v[1]), tol, dt.String())
	}
}

// With alpha 0 the teacher does not count: DistillCrossEntropy is
// CrossEntropy, loss and gradient, to the last bit in float64.
func TestDistillCrossEntropyAlphaZero(t *testing.T) {
	run := func(distill bool) []gorgonia.Value {
		g := gorgonia.NewGraph()
		l := input(g, "l", randDense(3, 6, 7))
		tg := intInput(g, "t", []int{6}, []int{0, 6, -100, 3, 3, 1})
		var y *gorgonia.Node
		var err error
		if distill {
			y, err = DistillCrossEntropy(l, tg, input(g, "q", randDense(4, 6, 7)), -100, 0.1, 0)
		} else {
			y, err = CrossEntropy(l, tg, -100, 0.1)
		}
		require.NoError(t, err)
		grads, err := gorgonia.Grad(y, l)
		require.NoError(t, err)
		return graphtest.Run(t, g, y, grads[0])
	}
	a, b := run(true), run(false)
	require.InDelta(t, floatsOf(t, b[0])[0], floatsOf(t, a[0])[0], 1e-15)
	require.InDeltaSlice(t, floatsOf(t, b[1]), floatsOf(t, a[1]), 1e-15)
}

func TestDistillCrossEntropyErrors(t *testing.T) {
	g := gorgonia.NewGraph()
	l := input(g, "l", randDense(1, 2, 3))
	tg := intInput(g, "t", []int{2}, []int{0, 1})
	_, err := DistillCrossEntropy(l, tg, input(g, "q", randDense(2, 2, 4)), -100, 0, 0.5)
	require.ErrorContains(t, err, "teacher (2, 4) does not fit logits (2, 3)")
	_, err = DistillCrossEntropy(l, tg, input(g, "q2", randDense(2, 2, 3)), -100, 0, 1.5)
	require.ErrorContains(t, err, "alpha 1.5 must be in [0, 1]")
	q32 := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(make([]float32, 6)))
	_, err = DistillCrossEntropy(l, tg, input(g, "q3", q32), -100, 0, 0.5)
	require.ErrorContains(t, err, "teacher is float32, logits float64")
}

func TestGELUValues(t *testing.T) {
	// Reference values from the definitions: gelu(1) = Φ(1) = 0.8413447460685429;
	// the tanh form at 1: 0.5·(1 + tanh(√(2/π)·1.044715)).
	g := gorgonia.NewGraph()
	x := input(g, "x", tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{-1, 0, 1})))
	y, err := Activate(x, GELU)
	require.NoError(t, err)
	got := eval(t, g, y).Data().([]float64)
	require.InDeltaSlice(t, []float64{-0.15865525393145707, 0, 0.8413447460685429}, got, 1e-15)

	g = gorgonia.NewGraph()
	x = input(g, "x", tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{1})))
	y, err = Activate(x, GELUTanh)
	require.NoError(t, err)
	want := 0.5 * (1 + math.Tanh(math.Sqrt(2/math.Pi)*1.044715))
	require.InDelta(t, want, eval(t, g, y).Data().([]float64)[0], 1e-15)
}

func TestSiLUValues(t *testing.T) {
	// silu(x) = x·σ(x): silu(1) = 1/(1 + e⁻¹) = 0.7310585786300049,
	// silu(−2) = −2/(1 + e²) = −0.23840584404423515; float32 agrees to 1e-7.
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		g := gorgonia.NewGraph()
		var x *gorgonia.Node
		if dt == tensor.Float64 {
			x = input(g, "x", tensor.New(tensor.WithShape(4), tensor.WithBacking([]float64{-2, 0, 1, 40})))
		} else {
			x = input(g, "x", tensor.New(tensor.WithShape(4), tensor.WithBacking([]float32{-2, 0, 1, 40})))
		}
		y, err := Activate(x, SiLU)
		require.NoError(t, err)
		var got []float64
		switch d := eval(t, g, y).Data().(type) {
		case []float64:
			got = d
		case []float32:
			for _, v := range d {
				got = append(got, float64(v))
			}
		}
		require.InDeltaSlice(t, []float64{-0.23840584404423515, 0, 0.7310585786300049, 40}, got, 1e-6)
	}
}

func TestMaskedSoftmaxValues(t *testing.T) {
	g := gorgonia.NewGraph()
	s := input(g, "s", randDense(5, 4, 3, 5))
	m := input(g, "mask", maskDense(2, 5, [2]int{1, 0}, [2]int{1, 1}, [2]int{1, 2}, [2]int{1, 3}, [2]int{1, 4}))
	y, err := MaskedSoftmax(s, m, 1, true)
	require.NoError(t, err)
	p := eval(t, g, y).Data().([]float64)
	for r := 0; r < 4*3; r++ {
		row := p[r*5 : (r+1)*5]
		z, i := r/3, r%3
		sum := 0.0
		for j, v := range row {
			if j > i+2 {
				require.Zero(t, v, "row %d key %d is in the causal future", r, j)
			}
			sum += v
		}
		if z >= 2 { // batch item 1 has every key padded
			require.Zero(t, sum, "fully masked row %d must be zero, not NaN", r)
		} else {
			require.InDelta(t, 1, sum, 1e-12)
		}
	}
}

func TestCrossEntropyValues(t *testing.T) {
	// Uniform logits over V classes: every loss is log V, smoothing or not.
	g := gorgonia.NewGraph()
	l := input(g, "l", tensor.New(tensor.WithShape(2, 4), tensor.WithBacking(make([]float64, 8))))
	y, err := CrossEntropy(l, intInput(g, "t", []int{2}, []int{3, -100}), -100, 0.2)
	require.NoError(t, err)
	v := graphtest.Run(t, g, y)[0]
	require.InDelta(t, math.Log(4), float64(*v.(*gorgonia.F64)), 1e-15)
}

func TestDropout(t *testing.T) {
	run := func(seed uint64, calls int) [][]float64 {
		g := gorgonia.NewGraph()
		ones := make([]float64, 1000)
		for i := range ones {
			ones[i] = 1
		}
		x := input(g, "x", tensor.New(tensor.WithShape(1000), tensor.WithBacking(ones)))
		site := &DropoutSite{Seed: seed, Site: 3}
		y, err := Dropout(x, 0.25, site)
		require.NoError(t, err)
		var v gorgonia.Value
		gorgonia.Read(y, &v)
		m := gorgonia.NewTapeMachine(g)
		defer m.Close()
		var out [][]float64
		for i := 0; i < calls; i++ {
			require.NoError(t, m.RunAll())
			m.Reset()
			out = append(out, append([]float64(nil), v.(*tensor.Dense).Data().([]float64)...))
			v = nil
		}
		require.EqualValues(t, calls, site.Call)
		return out
	}
	a, b, c := run(7, 2), run(7, 2), run(8, 1)
	require.Equal(t, a, b, "same seed, same masks")
	require.NotEqual(t, a[0], a[1], "each call draws a new mask")
	require.NotEqual(t, a[0], c[0], "another seed, another mask")
	dropped, sum := 0, 0.0
	for _, v := range a[0] {
		if v == 0 {
			dropped++
		} else {
			require.InDelta(t, 1/0.75, v, 1e-12)
		}
		sum += v
	}
	require.InDelta(t, 250, dropped, 50, "about p·n elements dropped")

	// The gradient reuses the forward mask; replaying the same call makes
	// the function deterministic for a finite-difference check.
	site := &DropoutSite{Seed: 1}
	requireGrad(t, func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := input(g, "x", randDense(1, 4, 5))
		y, err := Dropout(x, 0.5, site)
		return y, gorgonia.Nodes{x}, err
	}, gradcheck.Options{BeforeRun: func() { site.Call = 0 }})
}

func TestBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	x := input(g, "x", randDense(1, 2, 3, 4))
	_, err := LayerNorm(x, input(g, "w", randDense(1, 5)), nil, 1e-5)
	require.ErrorContains(t, err, "does not fit")
	_, err = MaskedSoftmax(x, input(g, "m", randDense(1, 2, 3)), 1, false)
	require.ErrorContains(t, err, "mask")
	_, err = SplitHeads(x, 3)
	require.ErrorContains(t, err, "divisible by 3 heads")
	_, err = CrossEntropy(x, intInput(g, "t", []int{2}, []int{0, 1}), -100, 0)
	require.ErrorContains(t, err, "do not fit")
	_, err = Dropout(x, 1, &DropoutSite{})
	require.ErrorContains(t, err, "[0, 1)")
	_, err = Patchify(input(g, "img", randDense(1, 1, 1, 5, 4)), 2)
	require.ErrorContains(t, err, "multiple of the patch size")
	_, err = Activate(x, Act(9))
	require.ErrorContains(t, err, "unknown activation")

	// Out-of-range ids and targets are run-time errors, not panics.
	g = gorgonia.NewGraph()
	y, err := Gather(input(g, "tab", randDense(1, 4, 2)), intInput(g, "ids", []int{2}, []int{1, 4}))
	require.NoError(t, err)
	m := gorgonia.NewTapeMachine(g)
	require.ErrorContains(t, m.RunAll(), "id 4 at position 1 is outside the table's 4 rows")
	_ = y
	g = gorgonia.NewGraph()
	_, err = CrossEntropy(input(g, "l", randDense(1, 2, 3)), intInput(g, "t", []int{2}, []int{1, 3}), -100, 0)
	require.NoError(t, err)
	m = gorgonia.NewTapeMachine(g)
	require.ErrorContains(t, m.RunAll(), "target 3 at position 1")
}

// erf32 stays within 5e-7 of math.Erf everywhere (the worst, 4.2e-7, is near
// |x| = 3.6) and is exactly ±1 far out.
func TestErf32(t *testing.T) {
	worst := 0.0
	for x := -8.0; x <= 8; x += 1e-4 {
		xf := float32(x)
		worst = math.Max(worst, math.Abs(float64(erf32(xf))-math.Erf(float64(xf))))
	}
	require.Less(t, worst, 5e-7)
	require.InDelta(t, 1, erf32(100), 1e-7)
	require.InDelta(t, -1, erf32(-100), 1e-7)
	require.Zero(t, erf32(0))
}

// tanh32 stays within 5e-7 of math.Tanh, absolute and relative.
func TestTanh32(t *testing.T) {
	worst := 0.0
	for x := -12.0; x <= 12; x += 1e-4 {
		xf := float32(x)
		want := math.Tanh(float64(xf))
		d := math.Abs(float64(tanh32(xf)) - want)
		worst = math.Max(worst, d/math.Max(1e-30, math.Abs(want)))
		require.Less(t, d, 5e-7)
	}
	require.Less(t, worst, 5e-7)
	require.Zero(t, tanh32(0))
}

// exp32 stays within 3e-7 of math.Exp, relatively, over float32's range.
func TestExp32(t *testing.T) {
	for x := -87.0; x <= 88.37; x += 1e-3 {
		xf := float32(x)
		want := math.Exp(float64(xf))
		require.InDelta(t, 0, (float64(exp32(xf))-want)/want, 3e-7, "x=%v", xf)
	}
	require.Zero(t, exp32(-100))
	require.True(t, math.IsInf(float64(exp32(100)), 1))
	require.Equal(t, float32(1), exp32(0))
}

// castTo is x as a backing slice of dt (float64 or float32).
func castTo(dt tensor.Dtype, x []float64) any {
	if dt == tensor.Float32 {
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = float32(v)
		}
		return y
	}
	return append([]float64(nil), x...)
}

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

// RMSNorm and SwiGLU against their formulas, in float64 and float32, and
// their gradients against finite differences. (Seen to fail with the
// mean(ĝ·x̂) term of RMSNorm's dx dropped, with dweight not accumulated over
// rows, and with SwiGLU's gate gradient missing the 1 + g·(1 − σ) factor.)
func TestRMSNormAndSwiGLU(t *testing.T) {
	const rows, d, eps = 6, 5, 1e-6
	x, w := randDense(1, 2, 3, d), randDense(2, d)
	xs, ws := x.Data().([]float64), w.Data().([]float64)
	want := make([]float64, len(xs))
	for r := range rows {
		var ss float64
		for _, v := range xs[r*d : (r+1)*d] {
			ss += v * v
		}
		rs := 1 / math.Sqrt(ss/d+eps)
		for i := range d {
			want[r*d+i] = ws[i] * xs[r*d+i] * rs
		}
	}
	gate, up := randDense(3, 4, 7), randDense(4, 4, 7)
	gs, us := gate.Data().([]float64), up.Data().([]float64)
	wantGLU := make([]float64, len(gs))
	for i, v := range gs {
		wantGLU[i] = v / (1 + math.Exp(-v)) * us[i]
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tol := 1e-14
		if dt == tensor.Float32 {
			tol = 1e-6
		}
		g := gorgonia.NewGraph()
		y, err := RMSNorm(input(g, "x", asDtype(x, dt)), input(g, "w", asDtype(w, dt)), eps)
		require.NoError(t, err)
		requireClose(t, want, floatsOf(t, eval(t, g, y)), tol, "rms norm "+dt.String())
		g = gorgonia.NewGraph()
		y, err = SwiGLU(input(g, "gate", asDtype(gate, dt)), input(g, "up", asDtype(up, dt)))
		require.NoError(t, err)
		requireClose(t, wantGLU, floatsOf(t, eval(t, g, y)), tol, "swiglu "+dt.String())
	}
	// float32 (the vector kernels) agrees with float64 in value and gradients.
	for _, rc := range []refCase{
		{name: "rmsnorm", inputs: []*tensor.Dense{randDense(1, 4, 3, 37), randDense(2, 37)}, nDiff: 2,
			fused: func(in []*gorgonia.Node) (*gorgonia.Node, error) { return RMSNorm(in[0], in[1], 1e-5) }},
		{name: "swiglu", inputs: []*tensor.Dense{randDense(3, 4, 37), randDense(4, 4, 37)}, nDiff: 2,
			fused: func(in []*gorgonia.Node) (*gorgonia.Node, error) { return SwiGLU(in[0], in[1]) }},
	} {
		want, got := runRef(t, rc, tensor.Float64, rc.fused), runRef(t, rc, tensor.Float32, rc.fused)
		requireClose(t, want.out, got.out, 1e-5, rc.name+" float32 value")
		for i := range want.grads {
			requireClose(t, want.grads[i], got.grads[i], 1e-5, fmt.Sprintf("%s float32 gradient %d", rc.name, i))
		}
	}
	for name, build := range map[string]gradcheck.Build{
		"rmsnorm": func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
			x, w := input(g, "x", randDense(1, 2, 3, 6)), input(g, "w", randDense(2, 6))
			y, err := RMSNorm(x, w, 1e-5)
			return y, gorgonia.Nodes{x, w}, err
		},
		"rmsnorm_2d": func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
			x, w := input(g, "x", randDense(5, 4, 3)), input(g, "w", randDense(6, 3))
			y, err := RMSNorm(x, w, 1e-2)
			return y, gorgonia.Nodes{x, w}, err
		},
		"swiglu": func(g *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
			a, b := input(g, "gate", randDense(7, 2, 3, 5)), input(g, "up", randDense(8, 2, 3, 5))
			y, err := SwiGLU(a, b)
			return y, gorgonia.Nodes{a, b}, err
		},
	} {
		t.Run(name, func(t *testing.T) { requireGrad(t, build, gradcheck.Options{}) })
	}
}

// RMSNorm and SwiGLU refuse what does not fit.
func TestRMSNormSwiGLUBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	x := input(g, "x", randDense(1, 2, 4))
	for _, c := range []struct {
		err  error
		want string
	}{
		{func() error { _, err := RMSNorm(x, input(g, "w3", randDense(1, 3)), 1e-6); return err }(), "weight (3) does not fit input (2, 4), want (4)"},
		{func() error { _, err := RMSNorm(x, input(g, "w4", randDense(1, 4)), 0); return err }(), "eps 0 must be positive"},
		{func() error { _, err := RMSNorm(x, nil, 1e-6); return err }(), "weight is nil"},
		{func() error { _, err := SwiGLU(x, input(g, "u", randDense(1, 4, 2))); return err }(), "must have one shape and dtype"},
		{func() error {
			_, err := SwiGLU(x, input(g, "u32", asDtype(randDense(1, 2, 4), tensor.Float32)))
			return err
		}(), "must have one shape and dtype"},
	} {
		require.ErrorContains(t, c.err, c.want)
	}
}

package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// vecKernelCase runs one float32 op kernel (forward or backward) on fixed
// random inputs and returns everything it wrote.
type vecKernelCase struct {
	name       string
	atol, rtol float64
	run        func() []float32
}

func vecKernelCases() []vecKernelCase {
	rng := rand.New(rand.NewPCG(11, 5))
	var cs []vecKernelCase
	add := func(name string, atol, rtol float64, run func() []float32) {
		cs = append(cs, vecKernelCase{name, atol, rtol, run})
	}
	for _, d := range []int{1, 7, 33, 256, 257} {
		const rows = 37
		x, g, b, dy := randF32(rng, rows*d, 2), randF32(rng, d, 1), randF32(rng, d, 1), randF32(rng, rows*d, 1)
		for i := range x[:d] { // a row far from zero: the two-pass variance matters
			x[i] += 1000
		}
		for _, bias := range [][]float32{b, nil} {
			add(fmt.Sprintf("layernorm/D%d/bias=%v", d, bias != nil), 1e-5, 1e-5, func() []float32 {
				y := make([]float32, len(x))
				layerNormFwd32(x, g, bias, y, nil, 1e-5)
				return y
			})
		}
		add(fmt.Sprintf("layernorm_grad_input/D%d", d), 1e-5, 1e-4, func() []float32 {
			out, stats := make([]float32, len(x)), make([]float64, 2*rows)
			layerNormFwd32(x, g, nil, make([]float32, len(x)), stats, 1e-5)
			layerNormBwd32(x, g, dy, out, stats, true)
			return out
		})
		add(fmt.Sprintf("layernorm_grad_weight/D%d", d), 1e-5, 1e-5, func() []float32 {
			out, stats := make([]float32, d), make([]float64, 2*rows)
			layerNormFwd32(x, g, nil, make([]float32, len(x)), stats, 1e-5)
			layerNormBwd32(x, g, dy, out, stats, false)
			return out
		})
	}
	for _, n := range []int{1, 17, 100003} {
		x, dy := randF32(rng, n, 3), randF32(rng, n, 1)
		for _, a := range []Act{GELU, GELUTanh} {
			add(fmt.Sprintf("%v/N%d", a, n), 1e-6, 1e-6, func() []float32 {
				out, kept := make([]float32, n), make([]float32, n)
				gelu32(a, false, x, nil, out, kept)
				grad, gradKept := make([]float32, n), make([]float32, n)
				gelu32(a, true, x, dy, grad, nil)
				gelu32(a, true, x, dy, gradKept, kept)
				return append(append(append(out, kept...), grad...), gradKept...)
			})
		}
	}
	for _, tk := range []int{1, 9, 17, 130} {
		const batch, heads, tq = 3, 2, 5
		s, dy := randF32(rng, batch*heads*tq*tk, 3), randF32(rng, batch*heads*tq*tk, 1)
		s[1] = float32(math.Inf(-1)) // an additive mask in the scores
		mask := make([]float32, batch*tk)
		for i := range mask {
			if i >= tk && rng.IntN(3) > 0 { // batch item 0 attends to all, 2 mostly to none
				mask[i] = 1
			}
		}
		for j := 0; j < tk; j += 2 {
			mask[2*tk+j] = 0
		}
		for _, m := range [][]float32{nil, mask} {
			for _, off := range []int{NoCausal, 0, tk - tq} {
				add(fmt.Sprintf("softmax/Tk%d/mask=%v/offset=%d", tk, m != nil, off), 1e-6, 1e-5, func() []float32 {
					p := nans(len(s)) // the kernel must write every element
					softmaxFwd32(s, m, p, batch*heads, tq, tk, 0.35, off != NoCausal, off)
					ds := nans(len(s))
					softmaxBwd32(p, dy, ds, tk, 0.35)
					return append(p, ds...)
				})
			}
		}
	}
	for _, v := range []int{1, 7, 33, 515} {
		const rows = 13
		logits := randF32(rng, rows*v, 3)
		targets := make([]int, rows)
		for i := range targets {
			targets[i] = rng.IntN(v)
		}
		targets[3] = -100
		for _, eps := range []float64{0, 0.1} {
			add(fmt.Sprintf("cross_entropy/V%d/smoothing=%g", v, eps), 1e-6, 1e-5, func() []float32 {
				grad := nans(len(logits)) // ignored rows must be zeroed
				loss := xentKernel(logits, targets, grad, v, -100, eps, xentRow32)
				noGrad := xentKernel(logits, targets, nil, v, -100, eps, xentRow32)
				return append(grad, float32(loss), float32(noGrad))
			})
		}
	}
	return cs
}

// TestVecKernelsMatchGo runs the float32 kernels of LayerNorm, GELU, the
// masked softmax and cross-entropy (forward and backward) under each vector
// implementation and under the Go fallback, and reports the largest
// difference per op.
func TestVecKernelsMatchGo(t *testing.T) {
	for _, impl := range asmImpls() {
		worst := map[string]*diff{}
		for _, c := range vecKernelCases() {
			var want, got []float32
			withVec(goVec, func() { want = c.run() })
			withVec(impl, func() { got = c.run() })
			op, _, _ := strings.Cut(c.name, "/")
			if worst[op] == nil {
				worst[op] = &diff{}
			}
			worst[op].check(t, impl.name+" "+c.name, want, got, c.atol, c.rtol)
		}
		for op, d := range worst {
			t.Logf("%s %-22s max |Δ| %.3g, max rel %.3g", impl.name, op, d.abs, d.rel)
		}
	}
}

func nans(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.NaN())
	}
	return s
}

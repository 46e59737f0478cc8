package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// vecLengths are row lengths around the vector widths (8 and 16 lanes, the
// 2- and 4-vector unrolled loops) and the masked tails.
var vecLengths = []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 255, 257}

// asmImpls are the vector implementations this CPU runs (none under purego
// or off amd64, where these tests only exercise the Go fallback).
func asmImpls() []*vecImpl {
	var out []*vecImpl
	for _, v := range vecImpls() {
		if v != goVec {
			out = append(out, v)
		}
	}
	return out
}

// withVec runs f with the kernels switched to impl.
func withVec(impl *vecImpl, f func()) {
	old := vk
	vk = impl
	defer func() { vk = old }()
	f()
}

func randF32(rng *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64()) * scale
	}
	return v
}

// guarded returns a slice of n elements whose backing array has guard
// sentinels after it, and a check that they are intact.
func guarded(t *testing.T, n int) ([]float32, func()) {
	const guard = 19
	b := make([]float32, n+guard)
	for i := range b {
		b[i] = -12345
	}
	return b[:n], func() {
		t.Helper()
		for i, v := range b[n:] {
			require.Equal(t, float32(-12345), v, "element %d past the end was written", i)
		}
	}
}

// diff tracks the largest absolute and relative differences of one kernel.
type diff struct{ abs, rel float64 }

// check compares got with want: |got − want| ≤ atol + rtol·|want|, or both
// non-finite the same way (NaN with NaN, ±Inf with the same Inf).
func (d *diff) check(t *testing.T, what string, want, got []float32, atol, rtol float64) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		w, g := float64(want[i]), float64(got[i])
		if math.IsNaN(w) || math.IsInf(w, 0) {
			require.True(t, w == g || math.IsNaN(w) && math.IsNaN(g), "%s[%d]: want %v, got %v", what, i, w, g)
			continue
		}
		e := math.Abs(g - w)
		d.abs = math.Max(d.abs, e)
		if w != 0 {
			d.rel = math.Max(d.rel, e/math.Abs(w))
		}
		require.LessOrEqual(t, e, atol+rtol*math.Abs(w), "%s[%d] (of %d): want %v, got %v", what, i, len(want), w, g)
	}
}

func sumAbs(x []float32) float64 {
	s := 0.0
	for _, v := range x {
		s += math.Abs(float64(v))
	}
	return s
}

// TestVecPrimitives compares every primitive of each vector implementation
// with the Go fallback on random rows of the vecLengths, and checks that
// nothing is written past a row.
func TestVecPrimitives(t *testing.T) {
	for _, impl := range asmImpls() {
		diffs := map[string]*diff{}
		d := func(name string) *diff {
			if diffs[name] == nil {
				diffs[name] = &diff{}
			}
			return diffs[name]
		}
		for _, n := range vecLengths {
			t.Run(fmt.Sprintf("%s/n%d", impl.name, n), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(n), 3))
				x, y, g, b := randF32(rng, n, 3), randF32(rng, n, 1), randF32(rng, n, 1), randF32(rng, n, 1)
				mask := make([]float32, n)
				for i := range mask {
					if rng.IntN(4) > 0 {
						mask[i] = 1
					}
				}
				mean, rstd := float32(0.3), float32(1.7)
				// Each case runs a primitive under one implementation and
				// returns its outputs; both are compared.
				type result struct {
					vals []float32
					tol  [2]float64 // atol, rtol
				}
				cases := map[string]func() result{
					"sum": func() result { return result{[]float32{vecSum(x)}, [2]float64{1e-6 * sumAbs(x), 0}} },
					"max": func() result { return result{[]float32{vecMax(x)}, [2]float64{0, 0}} },
					"dot": func() result {
						xy := make([]float32, n)
						for i := range xy {
							xy[i] = x[i] * y[i]
						}
						return result{[]float32{vecDot(x, y)}, [2]float64{1e-6 * sumAbs(xy), 0}}
					},
					"meanVar": func() result {
						m, v := vecMeanVar(x)
						return result{[]float32{m, v}, [2]float64{1e-6, 1e-5}}
					},
					"maxScaled": func() result { return result{[]float32{vecMaxScaled(x, nil, 0.7)}, [2]float64{0, 0}} },
					"maxScaledMasked": func() result {
						return result{[]float32{vecMaxScaled(x, mask, -1.3)}, [2]float64{0, 0}}
					},
				}
				for _, bias := range [][]float32{b, nil} {
					name := "lnAffine"
					if bias == nil {
						name += "NoBias"
					}
					cases[name] = func() result {
						out, ok := guarded(t, n)
						vecLNAffine(x, g, bias, out, mean, rstd)
						ok()
						return result{out, [2]float64{1e-6, 1e-6}}
					}
				}
				cases["lnGradSums"] = func() result {
					sg, sgx := vecLNGradSums(x, g, y, mean)
					return result{[]float32{sg, sgx}, [2]float64{1e-5 * (1 + sumAbs(x)), 0}}
				}
				cases["lnGradApply"] = func() result {
					out, ok := guarded(t, n)
					vecLNGradApply(x, g, y, out, mean, rstd, 0.2, -0.1)
					ok()
					return result{out, [2]float64{1e-6, 1e-6}}
				}
				cases["lnGammaAcc"] = func() result {
					out, ok := guarded(t, n)
					copy(out, b)
					vecLNGammaAcc(x, y, out, mean, rstd)
					ok()
					return result{out, [2]float64{1e-6, 1e-6}}
				}
				for _, m := range [][]float32{nil, mask} {
					for _, store := range []bool{false, true} {
						name := fmt.Sprintf("expShift/mask=%v/out=%v", m != nil, store)
						cases[name] = func() result {
							var out []float32
							ok := func() {}
							if store {
								out, ok = guarded(t, n)
							}
							sum := vecExpShift(x, m, out, 0.8, 1.5)
							ok()
							return result{append(out, sum), [2]float64{1e-30, 2e-6}}
						}
					}
				}
				cases["affine"] = func() result {
					out, ok := guarded(t, n)
					vecAffine(x, out, -0.7, 0.25)
					ok()
					return result{out, [2]float64{1e-7, 1e-6}}
				}
				cases["axpy"] = func() result {
					out, ok := guarded(t, n)
					copy(out, b)
					vecAxpy(x, out, 1.5)
					ok()
					return result{out, [2]float64{1e-6, 1e-6}}
				}
				cases["softmaxGrad"] = func() result {
					out, ok := guarded(t, n)
					vecSoftmaxGrad(g, y, out, 0.6, 0.1)
					ok()
					return result{out, [2]float64{1e-7, 1e-6}}
				}
				for _, keep := range []bool{false, true} {
					cases[fmt.Sprintf("swiglu/keep=%v", keep)] = func() result {
						out, ok := guarded(t, n)
						var kept []float32
						okKept := func() {}
						if keep {
							kept, okKept = guarded(t, n)
						}
						vecSwiGLU(x, y, out, kept)
						ok()
						okKept()
						return result{append(out, kept...), [2]float64{1e-6, 1e-6}}
					}
				}
				for _, a := range []Act{GELU, GELUTanh} {
					for _, keep := range []bool{false, true} {
						cases[fmt.Sprintf("%v/keep=%v", a, keep)] = func() result {
							out, ok := guarded(t, n)
							var kept []float32
							okKept := func() {}
							if keep {
								kept, okKept = guarded(t, n)
							}
							vecGELU(a, false, x, nil, out, kept)
							ok()
							okKept()
							return result{append(out, kept...), [2]float64{1e-6, 1e-6}}
						}
						cases[fmt.Sprintf("%vGrad/kept=%v", a, keep)] = func() result {
							var kept []float32
							if keep {
								kept = make([]float32, n)
								vecGELU(a, false, x, nil, make([]float32, n), kept)
							}
							out, ok := guarded(t, n)
							vecGELU(a, true, x, y, out, kept)
							ok()
							return result{out, [2]float64{2e-6, 2e-6}}
						}
					}
				}
				for name, run := range cases {
					var want, got result
					withVec(goVec, func() { want = run() })
					withVec(impl, func() { got = run() })
					d(name).check(t, name, want.vals, got.vals, want.tol[0], want.tol[1])
				}
			})
		}
		for name, df := range diffs {
			t.Logf("%s %-28s max |Δ| %.3g, max rel %.3g", impl.name, name, df.abs, df.rel)
		}
	}
}

// specialValues are exp inputs at and past the ends of float32's range,
// masked-out scores (−Inf) and NaN.
var specialValues = []float32{
	float32(math.Inf(-1)), -1e30, -100, -88, -87.4, -87.33, -87, -50, -1, -1e-8, 0,
	1e-8, 1, 50, 87, 88, 88.37, 88.38, 88.5, 100, 1e30, float32(math.Inf(1)), float32(math.NaN()),
}

// TestVecExp checks the vector exp (expShift with scale 1, shift 0) against
// exp32 on the special values, at every position in a vector and in the
// tail, and against math.Exp over float32's range, as TestExp32 does.
func TestVecExp(t *testing.T) {
	for _, impl := range asmImpls() {
		var d diff
		for _, n := range vecLengths[1:] {
			x := make([]float32, n)
			for i := range x {
				x[i] = specialValues[(i+n)%len(specialValues)]
			}
			want, got := make([]float32, n), make([]float32, n)
			withVec(goVec, func() { vecExpShift(x, nil, want, 1, 0) })
			withVec(impl, func() { vecExpShift(x, nil, got, 1, 0) })
			d.check(t, fmt.Sprintf("%s exp n=%d", impl.name, n), want, got, 0, 3e-7)
		}
		var x []float32
		for v := -87.0; v <= 88.37; v += 1e-3 {
			x = append(x, float32(v))
		}
		got := make([]float32, len(x))
		withVec(impl, func() { vecExpShift(x, nil, got, 1, 0) })
		for i, v := range x {
			want := math.Exp(float64(v))
			require.InDelta(t, 0, (float64(got[i])-want)/want, 3e-7, "%s: exp(%v)", impl.name, v)
		}
		withVec(impl, func() {
			require.Equal(t, float32(1), func() float32 { o := []float32{0}; vecExpShift([]float32{0}, nil, o, 1, 0); return o[0] }())
		})
		t.Logf("%s exp on special values: max |Δ| %.3g, max rel %.3g vs exp32", impl.name, d.abs, d.rel)
	}
}

// TestVecGELUSweep compares the vector GELU kernels with the Go ones over
// [−10, 10] and on the special values, through both the kept-term and the
// recomputing gradients.
func TestVecGELUSweep(t *testing.T) {
	var x []float32
	for v := -10.0; v <= 10; v += 1e-3 {
		x = append(x, float32(v))
	}
	x = append(x, specialValues...)
	n := len(x)
	dy := make([]float32, n)
	for i := range dy {
		dy[i] = 1
	}
	for _, impl := range asmImpls() {
		for _, a := range []Act{GELU, GELUTanh} {
			run := func(v *vecImpl) (out, kept, grad, gradKept []float32) {
				out, kept, grad, gradKept = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
				withVec(v, func() {
					vecGELU(a, false, x, nil, out, kept)
					vecGELU(a, true, x, dy, grad, nil)
					vecGELU(a, true, x, dy, gradKept, kept)
				})
				return
			}
			wo, wk, wg, wgk := run(goVec)
			o, k, gr, grk := run(impl)
			var dv, dk, dg diff
			name := fmt.Sprintf("%s %v", impl.name, a)
			dv.check(t, name+" value", wo, o, 1e-6, 1e-6)
			dk.check(t, name+" kept term", wk, k, 1e-6, 1e-6)
			dg.check(t, name+" grad", wg, gr, 2e-6, 2e-6)
			dg.check(t, name+" grad from kept", wgk, grk, 2e-6, 2e-6)
			t.Logf("%s: max |Δ| value %.3g, Φ/tanh %.3g, grad %.3g", name, dv.abs, dk.abs, dg.abs)
		}
	}
}

// TestVecSwiGLUSweep compares the vector SwiGLU kernels with swigluGo over
// [−100, 100] and on the special values (σ saturating to 0 and 1, exp's
// overflow), with and without σ kept; up is 1 and 0.5.
func TestVecSwiGLUSweep(t *testing.T) {
	var x []float32
	for v := -100.0; v <= 100; v += 1e-3 {
		x = append(x, float32(v))
	}
	x = append(x, specialValues...)
	n := len(x)
	for _, up := range []float32{1, 0.5} {
		u := make([]float32, n)
		for i := range u {
			u[i] = up
		}
		run := func(v *vecImpl) (out, kept, outKept []float32) {
			out, kept, outKept = make([]float32, n), make([]float32, n), make([]float32, n)
			withVec(v, func() {
				vecSwiGLU(x, u, out, nil)
				vecSwiGLU(x, u, outKept, kept)
			})
			return
		}
		wo, wk, wok := run(goVec)
		for _, impl := range asmImpls() {
			o, k, ok := run(impl)
			var dv, dk diff
			name := fmt.Sprintf("%s up=%v", impl.name, up)
			dv.check(t, name+" value", wo, o, 1e-6, 1e-6)
			dv.check(t, name+" value with σ kept", wok, ok, 1e-6, 1e-6)
			dk.check(t, name+" σ", wk, k, 1e-6, 1e-6)
			t.Logf("%s: max |Δ| value %.3g (rel %.3g), σ %.3g", name, dv.abs, dv.rel, dk.abs)
		}
	}
}

package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/d73a19ff/zoo/internal/parallel"
)

// BenchmarkVecKernels times the float32 kernels of bench_test.go's shapes
// (forward plus backward, without the graph) under each implementation this
// CPU runs, to compare AVX-512, AVX2 and the Go fallback directly.
func BenchmarkVecKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	type kernel struct {
		name string
		run  func()
	}
	var ks []kernel
	{
		const n, d = 2048, 256
		x, g, be, dy := randF32(rng, n*d, 1), randF32(rng, d, 1), randF32(rng, d, 1), randF32(rng, n*d, 1)
		y, dx, dg, stats := make([]float32, n*d), make([]float32, n*d), make([]float32, d), make([]float64, 2*n)
		ks = append(ks, kernel{"LayerNorm/N2048_D256", func() {
			layerNormFwd32(x, g, be, y, stats, 1e-5)
			layerNormBwd32(x, g, dy, dx, stats, true)
			clear(dg)
			layerNormBwd32(x, g, dy, dg, stats, false)
		}})
	}
	for _, a := range []Act{GELU, GELUTanh} {
		const n = 2048 * 1024
		x, dy := randF32(rng, n, 1), randF32(rng, n, 1)
		y, kept, dx := make([]float32, n), make([]float32, n), make([]float32, n)
		ks = append(ks, kernel{fmt.Sprintf("%v/N2048_D1024", a), func() {
			parallel.For(n, 8, func(lo, hi int) { gelu32(a, false, x[lo:hi], nil, y[lo:hi], kept[lo:hi]) })
			parallel.For(n, 8, func(lo, hi int) { gelu32(a, true, x[lo:hi], dy[lo:hi], dx[lo:hi], kept[lo:hi]) })
		}})
	}
	{
		const batch, heads, t = 16, 4, 128
		s, dy := randF32(rng, batch*heads*t*t, 3), randF32(rng, batch*heads*t*t, 1)
		mask := make([]float32, batch*t)
		for i := range batch {
			for j := range t - 4*i {
				mask[i*t+j] = 1
			}
		}
		p, ds := make([]float32, len(s)), make([]float32, len(s))
		ks = append(ks, kernel{"MaskedSoftmax/BH64_T128", func() {
			clear(p)
			softmaxFwd32(s, mask, p, batch*heads, t, t, 0.125, false, NoCausal)
			softmaxBwd32(p, dy, ds, t, 0.125)
		}})
	}
	{
		const n, v = 2048, 512
		logits := randF32(rng, n*v, 3)
		targets := make([]int, n)
		for i := range targets {
			targets[i] = (i * 37) % v
			if i%8 == 7 {
				targets[i] = -100
			}
		}
		grad := make([]float32, n*v)
		ks = append(ks, kernel{"CrossEntropy/N2048_V512", func() {
			xentKernel(logits, targets, grad, v, -100, 0.1, xentRow32)
		}})
	}
	for _, k := range ks {
		for _, impl := range vecImpls() {
			b.Run(k.name+"/"+impl.name, func(b *testing.B) {
				withVec(impl, func() {
					for b.Loop() {
						k.run()
					}
				})
			})
		}
	}
}

// BenchmarkVecRow times single-row primitives at a typical row length.
func BenchmarkVecRow(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{128, 1024} {
		x, y, out := randF32(rng, n, 1), randF32(rng, n, 1), make([]float32, n)
		for _, impl := range vecImpls() {
			withVec(impl, func() {
				for name, f := range map[string]func(){
					"sum":      func() { vecSum(x) },
					"dot":      func() { vecDot(x, y) },
					"meanVar":  func() { vecMeanVar(x) },
					"expShift": func() { vecExpShift(x, y, out, 0.5, 1) },
				} {
					b.Run(fmt.Sprintf("%s/n%d/%s", name, n, impl.name), func(b *testing.B) {
						withVec(impl, func() {
							for b.Loop() {
								f()
							}
						})
					})
				}
			})
		}
	}
}

package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestAdamW32Exact checks each vector implementation of the AdamW step
// against adamwGo bit for bit (parameters and both moments), over lengths
// with every tail, several steps in a row (so the moments grow from zero),
// with decay on and off, and gradients of every scale: zeros, subnormals,
// and values whose squares are subnormal or near overflow. Nothing past n
// is written.
func TestAdamW32Exact(t *testing.T) {
	for _, impl := range vecImpls() {
		for _, n := range []int{1, 7, 8, 15, 16, 17, 31, 33, 64, 100, 1000} {
			for _, decay := range []float32{1, 1 - 1e-3*0.01} {
				t.Run(fmt.Sprintf("%s/n%d/decay%g", impl.name, n, decay), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(n), 3))
					p0 := randF32(rng, n, 0.5)
					pw, mw, vw := append([]float32(nil), p0...), make([]float32, n), make([]float32, n)
					pg, okP := guarded(t, n)
					mg, okM := guarded(t, n)
					vg, okV := guarded(t, n)
					copy(pg, p0)
					clear(mg)
					clear(vg)
					for step := 1; step <= 4; step++ {
						g := randF32(rng, n, []float32{1, 1e-3, 1e-20, 1e15}[step-1])
						for i := range g {
							switch rng.IntN(10) {
							case 0:
								g[i] = 0
							case 1:
								g[i] = float32(1e-42) // subnormal
							}
						}
						bc1 := 1 - math.Pow(0.9, float64(step))
						bc2 := 1 - math.Pow(0.999, float64(step))
						lr := 1e-3
						args := [8]float32{decay, 0.9, float32(1 - 0.9), 0.999, float32(1 - 0.999), float32(math.Sqrt(bc2)), 1e-8, float32(-lr / bc1)}
						adamwGo(pw, g, mw, vw, args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7])
						withVec(impl, func() {
							AdamW32(pg, g, mg, vg, args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7])
						})
						for i := range n {
							for _, x := range [][2]float32{{pg[i], pw[i]}, {mg[i], mw[i]}, {vg[i], vw[i]}} {
								if math.Float32bits(x[0]) != math.Float32bits(x[1]) {
									t.Fatalf("step %d, element %d: %g (%#08x), Go %g (%#08x)", step, i, x[0], math.Float32bits(x[0]), x[1], math.Float32bits(x[1]))
								}
							}
						}
					}
					okP()
					okM()
					okV()
				})
			}
		}
	}
}

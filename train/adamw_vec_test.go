package train

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestUpdate32MatchesGeneric checks that the float32 step AdamW runs
// (update32, the vector kernels) gives update[float32]'s bits: parameters
// and both moments, over steps whose coefficients change, with decay and
// without, lengths with vector tails.
func TestUpdate32MatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 13, 16, 257, 4099} {
		for _, decay := range []bool{false, true} {
			p := make([]float32, n)
			for i := range p {
				p[i] = float32(rng.NormFloat64())
			}
			pw, mw, vw := append([]float32(nil), p...), make([]float32, n), make([]float32, n)
			pg, mg, vg := append([]float32(nil), p...), make([]float32, n), make([]float32, n)
			cfg := DefaultAdamWConfig()
			for step := 1; step <= 5; step++ {
				g := make([]float32, n)
				for i := range g {
					g[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(20)-10)))
				}
				lr := 1e-3 * float64(step)
				bc1, bc2 := 1-math.Pow(cfg.Beta1, float64(step)), 1-math.Pow(cfg.Beta2, float64(step))
				c := coeffs{decay: 1, beta1: cfg.Beta1, beta2: cfg.Beta2, eps: cfg.Eps, stepSize: lr / bc1, bc2Sqrt: math.Sqrt(bc2)}
				if decay {
					c.decay = 1 - lr*0.01
				}
				update(pw, g, mw, vw, c)
				update32(pg, g, mg, vg, c)
				for i := range n {
					for _, x := range [][2]float32{{pg[i], pw[i]}, {mg[i], mw[i]}, {vg[i], vw[i]}} {
						if math.Float32bits(x[0]) != math.Float32bits(x[1]) {
							t.Fatalf("n %d, decay %v, step %d, element %d: %g, generic %g", n, decay, step, i, x[0], x[1])
						}
					}
				}
			}
		}
	}
}

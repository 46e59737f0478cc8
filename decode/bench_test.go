package decode

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchSampler times one token drawn from a vocabulary of v logits
// N(0, scale²) — scale 3 is peaked, like a trained LM's, scale 0.5 flat —
// by the full-sort sampler this package replaced ("fullsort") and by ours
// ("select"), and reports how many tokens the filter kept.
func benchSampler(b *testing.B, v int, scale float64, cfg SampleConfig) {
	rng := rand.New(rand.NewPCG(1, 2))
	logits := make([]float64, v)
	for i := range logits {
		logits[i] = scale * rng.NormFloat64()
	}
	for _, impl := range []struct {
		name string
		next func() (int, int)
	}{
		{"fullsort", func() func() (int, int) {
			s := newFullSort(cfg, 1)
			return func() (int, int) { return s.next(0, logits), len(s.prob) }
		}()},
		{"select", func() func() (int, int) {
			s := newSampler(cfg, 1)
			return func() (int, int) { return s.next(0, logits), len(s.prob) }
		}()},
	} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			_, kept := impl.next() // warm-up: scratch grows once
			for b.Loop() {
				_, kept = impl.next()
			}
			b.ReportMetric(float64(kept), "considered")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/token")
		})
	}
}

func BenchmarkTopK(b *testing.B) {
	for _, c := range []struct{ v, k int }{{50257, 40}, {50257, 1000}, {8000, 40}} {
		b.Run(fmt.Sprintf("V%d_k%d", c.v, c.k), func(b *testing.B) {
			benchSampler(b, c.v, 3, SampleConfig{Temperature: 1, TopK: c.k, TopP: 1})
		})
	}
}

func BenchmarkTopP(b *testing.B) {
	for _, c := range []struct {
		v     int
		p     float64
		scale float64
		shape string
	}{{50257, 0.9, 3, "peaked"}, {50257, 0.9, 0.5, "flat"}, {8000, 0.9, 3, "peaked"}} {
		b.Run(fmt.Sprintf("V%d_p%g_%s", c.v, c.p, c.shape), func(b *testing.B) {
			benchSampler(b, c.v, c.scale, SampleConfig{Temperature: 1, TopP: c.p})
		})
	}
}

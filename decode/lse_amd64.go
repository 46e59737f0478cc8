//go:build amd64 && !purego

package decode

import "golang.org/x/sys/cpu"

// sumExpAVX2 is Σ e^(x[i] − hi) over n values, n a multiple of 4, each
// x[i] ≤ hi and not NaN, hi finite, four at a time (lse_amd64.s).
//
//go:noescape
func sumExpAVX2(x *float64, n int, hi float64) float64

// useAVX2 selects sumExpAVX2; tests clear it to check the Go loop.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// sumExpFast is sumExp, four terms at a time where the CPU has AVX2 and
// FMA. Its terms are as close to math.Exp's, but not always equal to
// sumExp's, nor summed in the same order.
func sumExpFast(x []float64, hi float64) float64 {
	n4 := len(x) &^ 3
	if !useAVX2 || n4 == 0 {
		return sumExp(x, hi)
	}
	return sumExpAVX2(&x[0], n4, hi) + sumExp(x[n4:], hi)
}

package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSumRows checks the column sums of a bias gradient, float32 (vector
// adds) and float64 (plain loop), against a float64 sum, over odd widths and
// sizes large enough to split the columns across goroutines.
func TestSumRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for _, tc := range []struct{ rows, w int }{{1, 1}, {3, 7}, {100, 17}, {5, 130}, {600, 130}, {1000, 64}} {
		x64 := make([]float64, tc.rows*tc.w)
		x32 := make([]float32, len(x64))
		for i := range x64 {
			x32[i] = rng.Float32() - 0.5
			x64[i] = float64(x32[i])
		}
		want := make([]float64, tc.w)
		for r := 0; r < tc.rows; r++ {
			for j := range want {
				want[j] += x64[r*tc.w+j]
			}
		}
		y32 := make([]float32, tc.w)
		y32[0] = 1 // sumRows accumulates
		y64 := make([]float64, tc.w)
		sumRows(x32, y32)
		sumRows(x64, y64)
		for j := range want {
			w0 := want[j]
			if j == 0 {
				w0++
			}
			if d := math.Abs(float64(y32[j]) - w0); d > 1e-5*float64(tc.rows+1) {
				t.Fatalf("rows %d w %d: float32 column %d = %g, want %g", tc.rows, tc.w, j, y32[j], w0)
			}
			if d := math.Abs(y64[j] - want[j]); d > 1e-12*float64(tc.rows) {
				t.Fatalf("rows %d w %d: float64 column %d = %g, want %g", tc.rows, tc.w, j, y64[j], want[j])
			}
		}
	}
}

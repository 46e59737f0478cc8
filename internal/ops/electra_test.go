package ops

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Inverse-CDF sampling picks the first id whose cumulative probability
// exceeds u, and over many u its frequencies are the softmax's.
func TestSampleRows(t *testing.T) {
	x := []float32{0, float32(math.Log(3)), -100, float32(math.Log(6))} // p ≈ 0.1, 0.3, 0, 0.6
	ids := make([]int, 1)
	for _, c := range []struct {
		u    float32
		want int
	}{{0, 0}, {0.05, 0}, {0.11, 1}, {0.39, 1}, {0.41, 3}, {0.999999, 3}} {
		sampleRows(x, []float32{c.u}, ids, 4)
		require.Equal(t, c.want, ids[0], "u %g", c.u)
	}
	counts := make([]int, 4)
	const n = 10000
	for i := range n {
		sampleRows(x, []float32{(float32(i) + 0.5) / n}, ids, 4)
		counts[ids[0]]++
	}
	require.InDelta(t, 0.1, float64(counts[0])/n, 1e-3)
	require.InDelta(t, 0.3, float64(counts[1])/n, 1e-3)
	require.Equal(t, 0, counts[2])
	require.InDelta(t, 0.6, float64(counts[3])/n, 1e-3)
}

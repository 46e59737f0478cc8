package parallel

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every index is visited exactly once, in contiguous chunks, and small work
// stays on one call.
func TestForCoversOnce(t *testing.T) {
	for _, c := range []struct{ n, cost, maxCalls int }{{0, 1, 1}, {10, 1, 1}, {3*MinWork + 7, 1, 64}, {1000, MinWork, 64}} {
		seen := make([]int32, c.n)
		var calls atomic.Int32
		For(c.n, c.cost, func(lo, hi int) {
			calls.Add(1)
			for i := lo; i < hi; i++ {
				atomic.AddInt32(&seen[i], 1)
			}
		})
		for i, s := range seen {
			require.EqualValues(t, 1, s, "n %d: index %d", c.n, i)
		}
		require.LessOrEqual(t, int(calls.Load()), c.maxCalls, "n %d", c.n)
	}
}

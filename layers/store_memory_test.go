package layers

import (
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A shape whose product overflows int, or passes MaxParamSize, is an
// error naming the parameter, not an allocation; the store stays usable.
func TestParamRefusesHugeShapes(t *testing.T) {
	s, err := NewStore()
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, shape := range [][]int{
		{math.MaxInt, 2},        // overflows int
		{1 << 40, 1 << 40},      // overflows int
		{1 << 20, 1 << 20},      // 2^40 elements: fits int, but absurd
		{2, MaxParamSize/2 + 1}, // one past the limit
	} {
		_, err := s.Root().Sub("big").Param("weight", shape, Constant(0))
		require.Error(t, err, "shape %v", shape)
		assert.ErrorContains(t, err, `parameter "big.weight" has shape`)
		assert.ErrorContains(t, err, "the limit of one tensor")
		_, err = s.Root().Buffer("buf", shape, Constant(0))
		assert.ErrorContains(t, err, "the limit of one tensor")
	}
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated")
	p, err := s.Root().Sub("big").Param("weight", []int{2, 3}, Constant(1))
	require.NoError(t, err, "a refused name is not taken")
	assert.Equal(t, 6, p.Value.Size())
	assert.Equal(t, 6, s.NumParams())
}

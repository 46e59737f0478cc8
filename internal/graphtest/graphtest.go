// Package graphtest holds test helpers shared by the zoo's packages.
package graphtest

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
)

// Run runs the graph once on a fresh tape machine and returns copies of the
// nodes' values, read through gorgonia.Read (the machine may reuse the memory
// of intermediate nodes).
func Run(t testing.TB, g *gorgonia.ExprGraph, nodes ...*gorgonia.Node) []gorgonia.Value {
	t.Helper()
	vals := make([]gorgonia.Value, len(nodes))
	for i, n := range nodes {
		gorgonia.Read(n, &vals[i])
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	require.NoError(t, m.RunAll())
	return vals
}

// RefusesBeforeAllocating runs f, which must fail with an error containing
// every one of want, having allocated less than limit bytes: the size
// check came before the allocation it guards.
func RefusesBeforeAllocating(t testing.TB, limit uint64, f func() error, want ...string) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := f()
	runtime.ReadMemStats(&after)
	require.Error(t, err)
	for _, w := range want {
		assert.ErrorContains(t, err, w)
	}
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, limit, "bytes allocated before refusing")
}

// Package graphtest holds test helpers shared by the zoo's packages.
package graphtest

import (
	"testing"

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

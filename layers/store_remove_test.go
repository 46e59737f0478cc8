package layers

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Remove takes parameters out of the store by name; an unknown name is an
// error and removes nothing.
func TestStoreRemove(t *testing.T) {
	s, err := NewStore()
	require.NoError(t, err)
	a, err := NewLinear(s.Root().Sub("a"), 2, 3, true)
	require.NoError(t, err)
	_, err = NewLinear(s.Root().Sub("b"), 3, 1, false)
	require.NoError(t, err)
	require.Equal(t, 6+3+3, s.NumParams())
	require.ErrorContains(t, s.Remove(a.Weight.Name, "nope"), `remove "nope"`)
	require.Len(t, s.Params(), 3)
	require.NoError(t, s.Remove(a.Weight.Name, a.Bias.Name))
	require.Len(t, s.Params(), 1)
	require.Equal(t, "b.weight", s.Params()[0].Name)
	_, ok := s.Param("a.weight")
	require.False(t, ok)
	require.Equal(t, 3, s.NumParams())
}

package seq2seq

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
)

// The Transformer declares its own no-decay parameters: its embedding
// tables, shared or not; matrices elsewhere are decayed, vectors never.
func TestDecay(t *testing.T) {
	for _, shared := range []bool{true, false} {
		c := Tiny()
		c.ShareEmbeddings, c.TieOutput = shared, shared
		m, err := New(c, layers.WithSeed(1))
		require.NoError(t, err)
		decayed, kept := 0, 0
		for _, p := range m.Store.Params() {
			d := m.Decay(p.Name, p.Value.Shape())
			switch {
			case p == m.SrcEmbed.Weight || p == m.TgtEmbed.Weight:
				require.False(t, d, p.Name)
				kept++
			case len(p.Value.Shape()) == 1:
				require.False(t, d, p.Name)
			default:
				require.True(t, d, p.Name)
				decayed++
			}
		}
		require.Positive(t, decayed)
		require.Equal(t, map[bool]int{true: 1, false: 2}[shared], kept, "shared: one table")
	}
}

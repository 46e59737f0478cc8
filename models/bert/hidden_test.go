package bert

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// hiddenByGraph runs a padded batch through the backbone as Hidden does
// and returns, per entry, the embeddings' output, each layer's output
// built block by block, and Hidden's output, each (B·T·D) flat.
func hiddenByGraph(t *testing.T, m *Model, ids, types [][]int) (steps [][]float64, last []float64) {
	t.Helper()
	b, err := newBatch(m.Config, ids, types)
	require.NoError(t, err)
	g := m.Store.NewGraph()
	in, err := b.inputs(g)
	require.NoError(t, err)
	h, err := m.embed(g, in)
	require.NoError(t, err)
	nodes := []*gorgonia.Node{h}
	for _, l := range m.Encoder.Layers {
		h, err = l.Forward(g, h, in.Mask)
		require.NoError(t, err)
		nodes = append(nodes, h)
	}
	y, err := m.Hidden(g, in)
	require.NoError(t, err)
	nodes = append(nodes, y)
	vals := make([]gorgonia.Value, len(nodes))
	for i, n := range nodes {
		gorgonia.Read(n, &vals[i])
	}
	vm, err := g.Machine()
	require.NoError(t, err)
	defer vm.Close()
	require.NoError(t, vm.RunAll())
	for _, v := range vals {
		x, err := layers.Float64s(v)
		require.NoError(t, err)
		steps = append(steps, x)
	}
	return steps[:len(steps)-1], steps[len(steps)-1]
}

// HiddenStates gives L+1 entries (T, D): the embeddings' output, then each
// layer's output, the last Hidden's (last_hidden_state) bit for bit; a
// sequence alone equals its row of a padded batch at its own positions,
// and nil token types are all 0.
func TestHiddenStates(t *testing.T) {
	cfg := testConfig()
	m, err := New(cfg, layers.WithDtype(tensor.Float64), layers.WithSeed(8))
	require.NoError(t, err)
	ids := [][]int{{2, 7, 9, 11, 3, 5, 6, 3}, {2, 8, 3}}
	types := [][]int{{0, 0, 0, 0, 0, 1, 1, 1}, {0, 0, 0}}
	all, err := m.hiddenStates(ids, types)
	require.NoError(t, err)
	require.Len(t, all, 2)
	steps, last := hiddenByGraph(t, m, ids, types)
	d, tl := cfg.HiddenSize, 8
	for r := range ids {
		require.Len(t, all[r], cfg.NumHiddenLayers+1)
		for k, e := range all[r] {
			require.Len(t, e, tl)
			for i, v := range e {
				require.Len(t, v, d)
				off := (r*tl + i) * d
				require.Equal(t, steps[k][off:off+d], v, "row %d entry %d position %d", r, k, i)
				if k == cfg.NumHiddenLayers {
					require.Equal(t, last[off:off+d], v, "row %d position %d: the last entry is Hidden's output", r, i)
				}
			}
		}
	}
	alone, err := m.HiddenStates(ids[1], types[1])
	require.NoError(t, err)
	require.Len(t, alone, cfg.NumHiddenLayers+1)
	for k := range alone {
		require.Len(t, alone[k], 3)
		for i := range alone[k] {
			require.InDeltaSlice(t, all[1][k][i], alone[k][i], 1e-12, "entry %d position %d", k, i)
		}
	}
	a0, err := m.HiddenStates(ids[1], nil)
	require.NoError(t, err)
	require.Equal(t, alone, a0)
	require.NotEqual(t, all[0][0][0], all[0][1][0], "entries differ: the test can tell them apart")
}

func TestHiddenStatesErrors(t *testing.T) {
	cfg := testConfig()
	m, err := New(cfg, layers.WithSeed(8))
	require.NoError(t, err)
	long := make([]int, cfg.MaxPositionEmbeddings+1)
	for _, c := range []struct {
		name       string
		ids, types []int
		want       string
	}{
		{"empty", nil, nil, "empty"},
		{"too long", long, nil, "max_position_embeddings"},
		{"id outside vocabulary", []int{2, cfg.VocabSize, 3}, nil, "outside the vocabulary"},
		{"token type outside", []int{2, 5, 3}, []int{0, 2, 0}, "type_vocab_size"},
		{"types length", []int{2, 5, 3}, []int{0, 0}, "token type ids"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := m.HiddenStates(c.ids, c.types)
			require.ErrorContains(t, err, c.want)
		})
	}
}

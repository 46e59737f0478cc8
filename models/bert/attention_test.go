package bert

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// attentionByHand recomputes layer l's attention probabilities (h, T, T)
// for row r of a batch: the layer's input comes from the graph (embeddings
// and the layers below), then softmax(q·kᵀ/√d_head) with padding keys
// masked is computed here in float64 from the query and key weights.
func attentionByHand(t *testing.T, m *Model, ids, types [][]int, l, r int) [][][]float64 {
	t.Helper()
	b, err := newBatch(m.Config, ids, types)
	require.NoError(t, err)
	g := m.Store.NewGraph()
	in, err := b.inputs(g)
	require.NoError(t, err)
	h, err := m.embed(g, in)
	require.NoError(t, err)
	for i := range l {
		h, err = m.Encoder.Layers[i].Forward(g, h, in.Mask)
		require.NoError(t, err)
	}
	var hv gorgonia.Value
	gorgonia.Read(h, &hv)
	vm := gorgonia.NewTapeMachine(g.ExprGraph)
	defer vm.Close()
	require.NoError(t, vm.RunAll())
	x, err := layers.Float64s(hv) // (B, T, D)
	require.NoError(t, err)
	d, nh, tl := m.Config.HiddenSize, m.Config.NumAttentionHeads, b.t
	x = x[r*tl*d : (r+1)*tl*d]
	a := m.Encoder.Layers[l].SelfAttn
	project := func(lin *layers.Linear) []float64 { // (T, D) = x·Wᵀ + b
		w, bias := lin.Weight.Value.Data().([]float64), lin.Bias.Value.Data().([]float64)
		out := make([]float64, tl*d)
		for i := range tl {
			for o := range d {
				s := bias[o]
				for k := range d {
					s += x[i*d+k] * w[o*d+k]
				}
				out[i*d+o] = s
			}
		}
		return out
	}
	q, k := project(a.Query), project(a.Key)
	hd := d / nh
	out := make([][][]float64, nh)
	for head := range nh {
		out[head] = make([][]float64, tl)
		for i := range tl {
			row := make([]float64, tl)
			z := 0.0
			for j := range tl {
				if b.mask[r*tl+j] == 0 {
					continue
				}
				s := 0.0
				for c := head * hd; c < (head+1)*hd; c++ {
					s += q[i*d+c] * k[j*d+c]
				}
				row[j] = math.Exp(s / math.Sqrt(float64(hd)))
				z += row[j]
			}
			for j := range row {
				row[j] /= z
			}
			out[head][i] = row
		}
	}
	return out
}

func TestAttentions(t *testing.T) {
	cfg := testConfig()
	m, err := New(cfg, layers.WithDtype(tensor.Float64), layers.WithSeed(8))
	require.NoError(t, err)
	ids := [][]int{{2, 7, 9, 11, 3, 5, 6, 3}, {2, 8, 3}}
	types := [][]int{{0, 0, 0, 0, 0, 1, 1, 1}, {0, 0, 0}}
	all, err := m.attentions(ids, types)
	require.NoError(t, err)
	require.Len(t, all, 2)
	for r := range ids {
		require.Len(t, all[r], cfg.NumHiddenLayers)
		for l, layer := range all[r] {
			require.Len(t, layer, cfg.NumAttentionHeads)
			want := attentionByHand(t, m, ids, types, l, r)
			for h, p := range layer {
				require.Len(t, p, 8)
				for i, row := range p {
					sum := 0.0
					for j, w := range row {
						sum += w
						if j >= len(ids[r]) {
							require.Zero(t, w, "row %d layer %d head %d: padding key %d", r, l, h, j)
						}
					}
					require.InDelta(t, 1, sum, 1e-12)
					require.InDeltaSlice(t, want[h][i], row, 1e-12, "row %d layer %d head %d query %d", r, l, h, i)
				}
			}
		}
	}
	// Alone, the short row's maps are the batch's without the padding.
	alone, err := m.Attentions(ids[1], types[1])
	require.NoError(t, err)
	for l := range alone {
		for h := range alone[l] {
			for i := range alone[l][h] {
				require.InDeltaSlice(t, all[1][l][h][i][:3], alone[l][h][i], 1e-12)
			}
		}
	}
	// nil token types are all 0.
	a0, err := m.Attentions(ids[1], nil)
	require.NoError(t, err)
	require.Equal(t, alone, a0)
	// Two different layers draw different maps: the test can tell them apart.
	require.NotEqual(t, all[0][0][0], all[0][1][0])
}

func TestAttentionsErrors(t *testing.T) {
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
			_, err := m.Attentions(c.ids, c.types)
			require.ErrorContains(t, err, c.want)
		})
	}
}

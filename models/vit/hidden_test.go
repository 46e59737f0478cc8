package vit

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/layers"
)

// HiddenStates gives, per image, L+1 entries (N+1, D): the embeddings'
// output, then each layer's output built block by block, bit for bit,
// before the final LayerNorm; that LayerNorm on the last entry is
// Features' output bit for bit, and FeaturesOutputs' Last is Features'.
func TestHiddenStates(t *testing.T) {
	cfg := testConfig()
	m, err := New(cfg, StoreOption(layers.WithDtype(tensor.Float64), layers.WithSeed(4)))
	require.NoError(t, err)
	const b = 2
	px := make([]float32, b*3*8*8)
	for i := range px {
		px[i] = float32(i%11)/11 - 0.4
	}
	got, err := m.HiddenStates(px, b)
	require.NoError(t, err)

	g := m.Store.NewGraph()
	in := g.Input("pixel_values", b, cfg.NumChannels, 8, 8)
	copyFloats(in, px)
	h, err := m.embed(g, in)
	require.NoError(t, err)
	nodes := []*gorgonia.Node{h}
	for _, l := range m.Encoder.Layers {
		h, err = l.Forward(g, h, nil)
		require.NoError(t, err)
		nodes = append(nodes, h)
	}
	normed, err := m.Encoder.Norm.Forward(g, h)
	require.NoError(t, err)
	feats, err := m.Features(g, in)
	require.NoError(t, err)
	outs, err := m.FeaturesOutputs(g, in, layers.Outputs{HiddenStates: true})
	require.NoError(t, err)
	require.Len(t, outs.Hidden, cfg.NumHiddenLayers+1)
	nodes = append(nodes, normed, feats, outs.Last)
	vals := make([]gorgonia.Value, len(nodes))
	for i, n := range nodes {
		gorgonia.Read(n, &vals[i])
	}
	vm, err := g.Machine()
	require.NoError(t, err)
	defer vm.Close()
	require.NoError(t, vm.RunAll())
	flat := make([][]float64, len(vals))
	for i, v := range vals {
		flat[i], err = layers.Float64s(v)
		require.NoError(t, err)
	}
	nl := cfg.NumHiddenLayers
	require.Equal(t, flat[nl+2], flat[nl+1], "the final LayerNorm on the last hidden state is Features' output")
	require.Equal(t, flat[nl+2], flat[nl+3], "FeaturesOutputs' Last is Features' output")

	d, tl := cfg.HiddenSize, cfg.NumPatches()+1
	require.Len(t, got, b)
	for r := range got {
		require.Len(t, got[r], nl+1)
		for k, e := range got[r] {
			require.Len(t, e, tl)
			for i, v := range e {
				off := (r*tl + i) * d
				require.Equal(t, flat[k][off:off+d], v, "image %d entry %d token %d", r, k, i)
			}
		}
	}
	require.NotEqual(t, got[0][nl][0], got[1][nl][0], "the images differ: the test can tell them apart")
}

func TestHiddenStatesErrors(t *testing.T) {
	m, err := New(testConfig())
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		n, b int
		h, w int
		want string
	}{
		{"no images", 0, 0, 8, 8, "pixel values are not"},
		{"short", 3*8*8 - 1, 1, 8, 8, "pixel values are not"},
		{"other size without interpolation", 3 * 12 * 12, 1, 12, 12, "WithInterpolation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := m.HiddenStatesAt(make([]float32, c.n), c.b, c.h, c.w)
			require.ErrorContains(t, err, c.want)
			_, err = m.AttentionsAt(make([]float32, c.n), c.b, c.h, c.w)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// Attentions gives, per image, L maps (h, N+1, N+1) equal bit for bit to
// FeaturesWithProbs' probabilities, rows summing to 1, and the rollout of
// them is AttentionRollout's.
func TestAttentions(t *testing.T) {
	cfg := testConfig()
	m, err := New(cfg, StoreOption(layers.WithDtype(tensor.Float64), layers.WithSeed(4)))
	require.NoError(t, err)
	const b = 2
	px := make([]float32, b*3*8*8)
	for i := range px {
		px[i] = float32(i%13)/13 - 0.5
	}
	got, err := m.Attentions(px, b)
	require.NoError(t, err)

	g := m.Store.NewGraph()
	in := g.Input("pixel_values", b, cfg.NumChannels, 8, 8)
	copyFloats(in, px)
	_, probs, err := m.FeaturesWithProbs(g, in)
	require.NoError(t, err)
	vals := make([]gorgonia.Value, len(probs))
	for i, n := range probs {
		gorgonia.Read(n, &vals[i])
	}
	vm, err := g.Machine()
	require.NoError(t, err)
	defer vm.Close()
	require.NoError(t, vm.RunAll())

	nh, tl := cfg.NumAttentionHeads, cfg.NumPatches()+1
	require.Len(t, got, b)
	flat := make([][]float64, cfg.NumHiddenLayers) // (B, h, T, T) per layer, rebuilt from got
	for r := range got {
		require.Len(t, got[r], cfg.NumHiddenLayers)
		for l, heads := range got[r] {
			want, err := layers.Float64s(vals[l])
			require.NoError(t, err)
			require.Len(t, heads, nh)
			for k, rows := range heads {
				require.Len(t, rows, tl)
				for i, row := range rows {
					off := ((r*nh+k)*tl + i) * tl
					require.Equal(t, want[off:off+tl], row, "image %d layer %d head %d query %d", r, l, k, i)
					sum := 0.0
					for _, v := range row {
						sum += v
					}
					require.InDelta(t, 1, sum, 1e-12)
					flat[l] = append(flat[l], row...)
				}
			}
		}
	}
	// flat was filled image by image within each layer: (B, h, T, T).
	roll, err := Rollout(flat, b, nh, tl)
	require.NoError(t, err)
	want, err := m.AttentionRollout(px, b)
	require.NoError(t, err)
	require.Equal(t, want, roll)
}

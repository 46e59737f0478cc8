package seq2seq

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/graphtest"
	"github.com/d73a19ff/zoo/layers"
)

// The presets' parameter counts, as their doc comments state them.
func TestPresetSizes(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want int
	}{{"Base", Base(), 63082496}, {"Small", Small(), 7577600}, {"Tiny", Tiny(), 43104}} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, c.cfg.Validate())
			m, err := New(c.cfg)
			require.NoError(t, err)
			require.Equal(t, c.want, m.NumParams())
		})
	}
}

func TestEveryLearnableGetsAGradient(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Config)
	}{
		{"post_shared_tied", func(*Config) {}},
		{"pre_separate_untied", func(c *Config) {
			c.NormFirst, c.ShareEmbeddings, c.TieOutput, c.TgtVocabSize, c.Activation = true, false, false, 13, "gelu"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Tiny()
			cfg.Dropout = 0.1
			c.edit(&cfg)
			m, err := New(cfg, layers.WithSeed(2))
			require.NoError(t, err)
			g := m.Store.NewGraph(layers.Training())
			f := m.NewFeed(g, 2, 5, 4)
			b, err := cfg.NewBatch([][]int{{3, 4, 5, 6}, {7}}, [][]int{{8, 9, 10}, {4, 5}}, 2, 5, 4)
			require.NoError(t, err)
			require.NoError(t, f.Load(b))
			loss, _, err := m.Loss(g, f.Inputs, f.Labels, 0.1)
			require.NoError(t, err)
			grads, err := gorgonia.Grad(loss, g.Learnables()...)
			require.NoError(t, err)
			require.Len(t, g.Params(), len(m.Store.Params()), "every parameter is in the graph")
			vals := runAll(t, g, grads)
			for i, p := range g.Params() {
				nonzero := false
				for _, v := range vals[i] {
					nonzero = nonzero || v != 0
				}
				require.True(t, nonzero, "%s got no gradient", p.Name)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*Config)
		msg  string
	}{
		{func(c *Config) { c.NumHeads = 5 }, "not divisible"},
		{func(c *Config) { c.TgtVocabSize = 12 }, "share_encoder_decoder_embeddings"},
		{func(c *Config) { c.PadTokenID = c.EOSTokenID }, "must differ"},
		{func(c *Config) { c.Activation = "tanh" }, "activation"},
		{func(c *Config) { c.Dropout = 1 }, "dropout"},
		{func(c *Config) { c.MaxLen = 1 }, "max_position_embeddings"},
		{func(c *Config) { c.BOSTokenID = 11 }, "decoder_start_token_id"},
	} {
		cfg := Tiny()
		c.edit(&cfg)
		require.ErrorContains(t, cfg.Validate(), c.msg)
	}
}

// runAll runs g and returns copies of the values of outs as float64s.
func runAll(t *testing.T, g *layers.Graph, outs gorgonia.Nodes) [][]float64 {
	t.Helper()
	vals := graphtest.Run(t, g.ExprGraph, outs...)
	res := make([][]float64, len(outs))
	for i, v := range vals {
		require.NotNil(t, v, "node %s has no value", outs[i])
		switch d := v.Data().(type) {
		case []float32:
			for _, x := range d {
				res[i] = append(res[i], float64(x))
			}
		case []float64:
			res[i] = append(res[i], d...)
		}
	}
	return res
}

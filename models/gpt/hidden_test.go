package gpt

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/graphtest"
	"github.com/d73a19ff/zoo/internal/safetensors"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// HiddenStates and Attentions equal transformers' GPT2Model
// output_hidden_states and output_attentions on the parity checkpoint, in
// float64 (tools/pytorch/gpt2_hidden_reference.py wrote the golden file):
// n_layer+1 states, the last after ln_f, and causal attention rows.
func TestHiddenStatesGolden(t *testing.T) {
	f, err := safetensors.ReadFile(filepath.Join(parityDir, "hidden.safetensors"))
	require.NoError(t, err)
	p := &parity{t: t, f: f}
	ids, _ := p.ints("input_ids")
	m, _, err := Load(parityDir, layers.WithDtype(tensor.Float64), models.Strict())
	require.NoError(t, err)

	hs, err := m.HiddenStates(ids)
	require.NoError(t, err)
	want, ok := f.Tensor("hidden_states")
	require.True(t, ok)
	wv, err := want.Float64s()
	require.NoError(t, err)
	c := m.Config
	require.Equal(t, []int{c.NLayer + 1, len(ids), c.NEmbd}, want.Shape)
	require.Len(t, hs, c.NLayer+1)
	for k := range hs {
		for i := range hs[k] {
			require.InDeltaSlice(t, wv[(k*len(ids)+i)*c.NEmbd:][:c.NEmbd], hs[k][i], 1e-10, "state %d position %d", k, i)
		}
	}

	att, err := m.Attentions(ids)
	require.NoError(t, err)
	wa, ok := f.Tensor("attentions")
	require.True(t, ok)
	av, err := wa.Float64s()
	require.NoError(t, err)
	require.Equal(t, []int{c.NLayer, c.NHead, len(ids), len(ids)}, wa.Shape)
	require.Len(t, att, c.NLayer)
	n := len(ids)
	for l := range att {
		require.Len(t, att[l], c.NHead)
		for h := range att[l] {
			for i := range att[l][h] {
				require.InDeltaSlice(t, av[((l*c.NHead+h)*n+i)*n:][:n], att[l][h][i], 1e-10, "layer %d head %d row %d", l, h, i)
			}
		}
	}
}

// The last hidden state is what the model's Hidden computes (the LM
// head's input), bit for bit; the others are not it.
func TestHiddenStatesLast(t *testing.T) {
	m, _, err := Load(parityDir)
	require.NoError(t, err)
	ids := []int{95, 4, 8, 15, 16, 23, 42}
	hs, err := m.HiddenStates(ids)
	require.NoError(t, err)

	g := m.Store.NewGraph()
	in := Inputs{IDs: g.IntInput("input_ids", 1, len(ids))}
	setInts(t, in.IDs, ids)
	h, err := m.Hidden(g, in)
	require.NoError(t, err)
	want := graphtest.Run(t, g.ExprGraph, h)[0].(*tensor.Dense).Data().([]float32)
	d := m.Config.NEmbd
	for i := range ids {
		for j := range d {
			require.Equal(t, float64(want[i*d+j]), hs[m.Config.NLayer][i][j], "position %d feature %d", i, j)
		}
	}
	require.NotEqual(t, hs[m.Config.NLayer-1], hs[m.Config.NLayer])

	_, err = m.HiddenStates(nil)
	require.ErrorContains(t, err, "gpt hidden states: no tokens")
	_, err = m.Attentions(make([]int, m.Config.NPositions+1))
	require.ErrorContains(t, err, "exceed the context")
}

package seq2seq

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

// Outputs equals transformers' MarianModel output_hidden_states and
// output_attentions on the opus_shared fixture, in float64
// (tools/pytorch/marian_hidden_reference.py wrote the golden file).
func TestOutputsGolden(t *testing.T) {
	dir := filepath.Join("testdata", "marian", "opus_shared")
	f, err := safetensors.ReadFile(filepath.Join(dir, "hidden.safetensors"))
	require.NoError(t, err)
	m, _, err := Load(dir, layers.WithDtype(tensor.Float64), models.Strict())
	require.NoError(t, err)
	ids, _ := caseInts(t, f, "input_ids")
	dec, _ := caseInts(t, f, "decoder_input_ids")
	c := m.Config
	require.Equal(t, c.EOSTokenID, ids[len(ids)-1])
	require.Equal(t, c.BOSTokenID, dec[0])
	src, tgt := ids[:len(ids)-1], dec[1:]

	o, err := m.Outputs(src, tgt, layers.Outputs{HiddenStates: true, Attentions: true, CrossAttentions: true})
	require.NoError(t, err)
	ts, tt, h := len(ids), len(dec), c.NumHeads
	for _, s := range []struct {
		name  string
		got   [][][]float64
		shape []int
	}{
		{"encoder_hidden_states", o.EncoderHiddenStates, []int{c.NumEncoderLayers + 1, ts, c.DModel}},
		{"decoder_hidden_states", o.DecoderHiddenStates, []int{c.NumDecoderLayers + 1, tt, c.DModel}},
	} {
		want := golden(t, f, s.name, s.shape)
		require.Len(t, s.got, s.shape[0], s.name)
		for k := range s.got {
			for i := range s.got[k] {
				require.InDeltaSlice(t, want[(k*s.shape[1]+i)*s.shape[2]:][:s.shape[2]], s.got[k][i], 1e-10, "%s %d position %d", s.name, k, i)
			}
		}
	}
	for _, a := range []struct {
		name  string
		got   [][][][]float64
		shape []int
	}{
		{"encoder_attentions", o.EncoderAttentions, []int{c.NumEncoderLayers, h, ts, ts}},
		{"decoder_attentions", o.DecoderAttentions, []int{c.NumDecoderLayers, h, tt, tt}},
		{"cross_attentions", o.CrossAttentions, []int{c.NumDecoderLayers, h, tt, ts}},
	} {
		want := golden(t, f, a.name, a.shape)
		require.Len(t, a.got, a.shape[0], a.name)
		for l := range a.got {
			require.Len(t, a.got[l], h)
			for k := range a.got[l] {
				for i := range a.got[l][k] {
					require.InDeltaSlice(t, want[((l*h+k)*a.shape[2]+i)*a.shape[3]:][:a.shape[3]], a.got[l][k][i], 1e-10, "%s layer %d head %d row %d", a.name, l, k, i)
				}
			}
		}
	}
}

// golden reads a float64 tensor of the given shape.
func golden(t *testing.T, f *safetensors.File, name string, shape []int) []float64 {
	ts, ok := f.Tensor(name)
	require.True(t, ok, name)
	require.Equal(t, shape, ts.Shape, name)
	v, err := ts.Float64s()
	require.NoError(t, err)
	return v
}

// The last hidden states are what the model's Encode and decoder compute
// (the memory and the LM head's input), bit for bit, for a post-norm and a
// pre-norm model (where they follow the final LayerNorm); what is not
// asked for is nil; the cross-attentions are CrossAttention's.
func TestOutputsLast(t *testing.T) {
	for _, dir := range []string{filepath.Join("testdata", "marian", "opus_shared"), filepath.Join("testdata", "parity", "pre_separate")} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			m, _, err := Load(dir)
			require.NoError(t, err)
			src, tgt := []int{5, 9, 13, 4}, []int{11, 3, 7}
			o, err := m.Outputs(src, tgt, layers.Outputs{HiddenStates: true})
			require.NoError(t, err)
			require.Nil(t, o.EncoderAttentions)
			require.Nil(t, o.DecoderAttentions)
			require.Nil(t, o.CrossAttentions)

			ts, tt := SourceLen(len(src)), TargetLen(len(tgt))
			b, err := m.Config.NewBatch([][]int{src}, [][]int{tgt}, 1, ts, tt)
			require.NoError(t, err)
			g := m.Store.NewGraph()
			f := m.NewFeed(g, 1, ts, tt)
			require.NoError(t, f.Load(b))
			mem, err := m.Encode(g, f.Src, f.SrcMask)
			require.NoError(t, err)
			y, err := m.decode(g, f.TgtIn, f.TgtMask, mem, f.SrcMask)
			require.NoError(t, err)
			vals := graphtest.Run(t, g.ExprGraph, mem, y)
			d := m.Config.DModel
			for _, c := range []struct {
				got  [][]float64
				want []float32
			}{
				{o.EncoderHiddenStates[m.Config.NumEncoderLayers], vals[0].(*tensor.Dense).Data().([]float32)},
				{o.DecoderHiddenStates[m.Config.NumDecoderLayers], vals[1].(*tensor.Dense).Data().([]float32)},
			} {
				for i := range c.got {
					for j := range d {
						require.Equal(t, float64(c.want[i*d+j]), c.got[i][j], "position %d feature %d", i, j)
					}
				}
			}

			o, err = m.Outputs(src, tgt, layers.Outputs{CrossAttentions: true})
			require.NoError(t, err)
			require.Nil(t, o.EncoderHiddenStates)
			want, err := m.CrossAttention(src, tgt)
			require.NoError(t, err)
			for l := range want {
				for k := range want[l] {
					for i := range want[l][k] {
						require.InDeltaSlice(t, want[l][k][i], o.CrossAttentions[l][k][i], 1e-6)
					}
				}
			}
		})
	}
	m, _, err := Load(filepath.Join("testdata", "marian", "opus_shared"))
	require.NoError(t, err)
	_, err = m.Outputs(nil, []int{1}, layers.Outputs{HiddenStates: true})
	require.ErrorContains(t, err, "seq2seq outputs: the source is empty")
	_, err = m.Outputs(make([]int, m.Config.MaxLen), nil, layers.Outputs{HiddenStates: true})
	require.ErrorContains(t, err, "exceed max_len")
}

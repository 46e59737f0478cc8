package layers

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Encoder.ForwardOutputs, for pre- and post-norm stacks, with and without
// attentions: L+1 hidden states (B, T, D), the first the stack's input and
// layer i's output at i (the first layer's equals that block's Forward),
// the last before the final norm (the norm applied to it gives Last) or
// Last itself (post-norm); Last equals Forward's output bit for bit
// without attentions, ForwardWithProbs' with them, and the attentions
// equal ForwardWithProbs' bit for bit.
func TestEncoderForwardOutputs(t *testing.T) {
	const b, tl, d, h, n = 2, 4, 8, 2, 3
	for _, norm := range []Norm{PreNorm, PostNorm} {
		for _, attn := range []bool{false, true} {
			s, err := NewStore(WithDtype(tensor.Float64), WithSeed(7))
			require.NoError(t, err)
			cfg := BlockConfig{Dim: d, Heads: h, FFNDim: 16, Activation: "gelu", Norm: norm, LayerNormEps: 1e-5, Bias: true}
			enc, err := NewEncoder(s.Root(), cfg, n)
			require.NoError(t, err)
			g := s.NewGraph()
			x := randInput(g, "x", 3, b, tl, d)
			mask, err := g.Constant("mask", []float64{1, 1, 1, 1, 1, 1, 0, 0}, b, tl)
			require.NoError(t, err)
			out, err := enc.ForwardOutputs(g, x, mask, Outputs{HiddenStates: true, Attentions: attn})
			require.NoError(t, err)
			require.Len(t, out.Hidden, n+1)
			require.Same(t, x, out.Hidden[0], "hidden_states[0] is the stack's input")
			var want *gorgonia.Node
			var wantProbs []*gorgonia.Node
			if attn {
				require.Len(t, out.Attentions, n)
				want, wantProbs, err = enc.ForwardWithProbs(g, x, mask)
			} else {
				require.Nil(t, out.Attentions)
				want, err = enc.Forward(g, x, mask)
			}
			require.NoError(t, err)
			first, err := enc.Layers[0].Forward(g, x, mask)
			require.NoError(t, err)
			lastNormed := out.Hidden[n]
			if norm == PreNorm {
				require.NotSame(t, out.Last, out.Hidden[n])
				lastNormed, err = enc.Norm.Forward(g, out.Hidden[n])
				require.NoError(t, err)
			} else {
				require.Same(t, out.Last, out.Hidden[n], "post-norm: the last hidden state is the output")
			}
			nodes := append([]*gorgonia.Node{out.Last, want, lastNormed, first}, out.Hidden...)
			nodes = append(append(nodes, out.Attentions...), wantProbs...)
			vals := runRead(t, g, nodes...)
			name := func(what string) string {
				return string(norm) + " attentions " + map[bool]string{false: "off", true: "on"}[attn] + ": " + what
			}
			require.Equal(t, vals[1].Data(), vals[0].Data(), name("Last is the stack's output bit for bit"))
			require.Equal(t, vals[0].Data(), vals[2].Data(), name("Last is the last hidden state, through the final norm when pre-norm"))
			hid := vals[4 : 4+n+1]
			if !attn {
				require.Equal(t, vals[3].Data(), hid[1].Data(), name("hidden_states[1] is layer 0's output"))
			}
			for i, v := range hid {
				require.Equal(t, tensor.Shape{b, tl, d}, v.Shape(), name("hidden state shape"), i)
			}
			if attn {
				got, wantP := vals[4+n+1:4+2*n+1], vals[4+2*n+1:]
				for l := range got {
					require.Equal(t, tensor.Shape{b * h, tl, tl}, got[l].Shape())
					require.Equal(t, wantP[l].Data(), got[l].Data(), name("attentions"), l)
				}
			}
		}
	}
}

// ForwardOutputs with nothing asked for is Forward: no hidden states, no
// attentions, the same output bit for bit.
func TestEncoderForwardOutputsNone(t *testing.T) {
	s := newStore64(t)
	enc, err := NewEncoder(s.Root(), BlockConfig{Dim: 8, Heads: 2, FFNDim: 16, Activation: "gelu", Norm: PreNorm, LayerNormEps: 1e-5, Bias: true}, 2)
	require.NoError(t, err)
	g := s.NewGraph()
	x := randInput(g, "x", 1, 2, 3, 8)
	out, err := enc.ForwardOutputs(g, x, nil, Outputs{})
	require.NoError(t, err)
	require.Nil(t, out.Hidden)
	require.Nil(t, out.Attentions)
	y, err := enc.Forward(g, x, nil)
	require.NoError(t, err)
	vals := runRead(t, g, out.Last, y)
	require.Equal(t, vals[1].Data(), vals[0].Data())
}

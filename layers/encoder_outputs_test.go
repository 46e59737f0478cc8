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

// An encoder refuses cross-attentions: it has none.
func TestEncoderForwardOutputsCross(t *testing.T) {
	s := newStore64(t)
	enc, err := NewEncoder(s.Root(), BlockConfig{Dim: 8, Heads: 2, FFNDim: 16, Activation: "gelu", Norm: PreNorm, LayerNormEps: 1e-5, Bias: true}, 1)
	require.NoError(t, err)
	g := s.NewGraph()
	_, err = enc.ForwardOutputs(g, randInput(g, "x", 1, 2, 3, 8), nil, Outputs{CrossAttentions: true})
	require.ErrorContains(t, err, "no cross-attention")
}

// Decoder.ForwardOutputs, for pre- and post-norm stacks with padding
// masks: without attentions Last is Forward's output bit for bit, the L+1
// hidden states are the input, then each layer's output (the first
// layer's that block's Forward bit for bit), the last before the final
// norm (pre-norm) or Last itself (post-norm); cross-attentions alone are
// each block's ForwardWithProbs bit for bit (layer 0 checked); with
// self-attentions too, Last is Forward's to rounding and the maps are
// causal, masked distributions of the right shapes.
func TestDecoderForwardOutputs(t *testing.T) {
	const b, tl, tm, d, h, n = 2, 4, 3, 8, 2, 2
	for _, norm := range []Norm{PreNorm, PostNorm} {
		s, err := NewStore(WithDtype(tensor.Float64), WithSeed(11))
		require.NoError(t, err)
		cfg := BlockConfig{Dim: d, Heads: h, FFNDim: 16, Activation: "gelu", Norm: norm, LayerNormEps: 1e-5, Bias: true}
		dec, err := NewDecoder(s.Root(), cfg, n)
		require.NoError(t, err)
		g := s.NewGraph()
		x := randInput(g, "x", 3, b, tl, d)
		mem := randInput(g, "mem", 4, b, tm, d)
		keep := []float64{1, 1, 1, 1, 1, 1, 1, 0}
		memKeep := []float64{1, 1, 1, 1, 1, 0}
		mask, err := g.Constant("mask", keep, b, tl)
		require.NoError(t, err)
		memMask, err := g.Constant("mem_mask", memKeep, b, tm)
		require.NoError(t, err)

		plain, err := dec.ForwardOutputs(g, x, mask, mem, memMask, Outputs{HiddenStates: true})
		require.NoError(t, err)
		require.Len(t, plain.Hidden, n+1)
		require.Same(t, x, plain.Hidden[0])
		require.Nil(t, plain.Attentions)
		require.Nil(t, plain.CrossAttentions)
		want, err := dec.Forward(g, x, mask, mem, memMask)
		require.NoError(t, err)
		first, err := dec.Layers[0].Forward(g, x, mask, mem, memMask)
		require.NoError(t, err)
		lastNormed := plain.Hidden[n]
		if norm == PreNorm {
			lastNormed, err = dec.Norm.Forward(g, plain.Hidden[n])
			require.NoError(t, err)
		} else {
			require.Same(t, plain.Last, plain.Hidden[n])
		}
		cross, err := dec.ForwardOutputs(g, x, mask, mem, memMask, Outputs{HiddenStates: true, CrossAttentions: true})
		require.NoError(t, err)
		require.Len(t, cross.CrossAttentions, n)
		require.Nil(t, cross.Attentions)
		firstOut, firstCross, err := dec.Layers[0].ForwardWithProbs(g, x, mask, mem, memMask)
		require.NoError(t, err)
		all, err := dec.ForwardOutputs(g, x, mask, mem, memMask, Outputs{Attentions: true, CrossAttentions: true})
		require.NoError(t, err)
		require.Nil(t, all.Hidden)
		require.Len(t, all.Attentions, n)
		require.Len(t, all.CrossAttentions, n)

		nodes := []*gorgonia.Node{plain.Last, want, lastNormed, first, plain.Hidden[1], cross.CrossAttentions[0], firstCross, cross.Hidden[1], firstOut, all.Last}
		nodes = append(append(nodes, all.Attentions...), all.CrossAttentions...)
		vals := runRead(t, g, nodes...)
		require.Equal(t, vals[1].Data(), vals[0].Data(), "%s: Last is Forward's output", norm)
		require.Equal(t, vals[0].Data(), vals[2].Data(), "%s: Last is the last hidden state, through the final norm when pre-norm", norm)
		require.Equal(t, vals[3].Data(), vals[4].Data(), "%s: hidden_states[1] is layer 0's output", norm)
		require.Equal(t, vals[6].Data(), vals[5].Data(), "%s: cross-attentions are the block's", norm)
		require.Equal(t, vals[8].Data(), vals[7].Data(), "%s: with cross-attentions, layer 0's output is ForwardWithProbs'", norm)
		require.InDeltaSlice(t, vals[1].Data(), vals[9].Data(), 1e-12, "%s: with every map, Last is Forward's to rounding", norm)
		check := func(what string, v gorgonia.Value, tk int, masked func(r, i, j int) bool) {
			require.Equal(t, tensor.Shape{b * h, tl, tk}, v.Shape(), what)
			p := v.Data().([]float64)
			for r := 0; r < b*h; r++ {
				for i := 0; i < tl; i++ {
					sum := 0.0
					for j := 0; j < tk; j++ {
						w := p[(r*tl+i)*tk+j]
						sum += w
						if masked(r, i, j) {
							require.Zero(t, w, "%s %s map %d [%d][%d]", norm, what, r, i, j)
						}
					}
					require.InDelta(t, 1, sum, 1e-12)
				}
			}
		}
		for l := 0; l < n; l++ {
			check("self", vals[10+l], tl, func(r, i, j int) bool { return j > i || keep[(r/h)*tl+j] == 0 })
			check("cross", vals[10+n+l], tm, func(r, i, j int) bool { return memKeep[(r/h)*tm+j] == 0 })
		}
	}
	s := newStore64(t)
	dec, err := NewDecoder(s.Root(), BlockConfig{Dim: 8, Heads: 2, FFNDim: 16, Activation: "gelu", Norm: PreNorm, LayerNormEps: 1e-5, Bias: true}, 1)
	require.NoError(t, err)
	g := s.NewGraph()
	_, err = dec.ForwardOutputs(g, randInput(g, "x", 1, 2, 3, 8), nil, nil, nil, Outputs{HiddenStates: true})
	require.ErrorContains(t, err, "encoder output")
}

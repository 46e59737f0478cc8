package layers

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// doubled is a Normalizer that runs a LayerNorm and scales it by 2: a
// non-default norm whose use shows in a block's output.
type doubled struct{ ln *LayerNorm }

func (d doubled) Forward(g *Graph, x *gorgonia.Node) (*gorgonia.Node, error) {
	y, err := d.ln.Forward(g, x)
	if err != nil {
		return nil, err
	}
	return gorgonia.Mul(y, gorgonia.NewConstant(float32(2)))
}

// partsOutput builds a two-layer stack of cfg (an encoder, or a decoder
// with decoder) with seed 1 and returns its output for a fixed input, and
// the names of its parameters.
func partsOutput(t *testing.T, cfg BlockConfig, decoder bool) ([]float32, []string) {
	t.Helper()
	s, err := NewStore(WithSeed(1))
	require.NoError(t, err)
	g := s.NewGraph()
	x := randInput32(g, "x", 2, 4, cfg.Dim)
	mask := keyMask(g, 2, 4, [2]int{1, 3})
	var y *gorgonia.Node
	if decoder {
		d, err := NewDecoder(s.Root(), cfg, 2)
		require.NoError(t, err)
		y, err = d.Forward(g, x, mask, randInput32(g, "mem", 2, 3, cfg.Dim), nil)
		require.NoError(t, err)
	} else {
		e, err := NewEncoder(s.Root(), cfg, 2)
		require.NoError(t, err)
		y, err = e.Forward(g, x, mask)
		require.NoError(t, err)
	}
	var out gorgonia.Value
	gorgonia.Read(y, &out)
	m := gorgonia.NewTapeMachine(g.ExprGraph)
	defer m.Close()
	require.NoError(t, m.RunAll())
	var names []string
	for _, p := range s.Params() {
		names = append(names, p.Name)
	}
	return append([]float32(nil), out.(*tensor.Dense).Data().([]float32)...), names
}

// BlockConfig.NewNorm builds every norm of a block and a stack: a
// LayerNorm built by NewNorm gives the default's output and parameter
// names bit for bit, and a norm that doubles its output changes the output
// of pre- and post-norm encoders and decoders.
func TestBlockNewNorm(t *testing.T) {
	base := BlockConfig{Dim: 8, Heads: 2, FFNDim: 16, Activation: "gelu", LayerNormEps: 1e-5, Bias: true}
	asLayerNorm := func(s Scope, dim int) (Normalizer, error) { return NewLayerNorm(s, dim, 1e-5, true) }
	double := func(s Scope, dim int) (Normalizer, error) {
		ln, err := NewLayerNorm(s, dim, 1e-5, true)
		return doubled{ln}, err
	}
	for _, c := range []struct {
		name    string
		norm    Norm
		decoder bool
	}{{"encoder_pre", PreNorm, false}, {"encoder_post", PostNorm, false}, {"decoder_pre", PreNorm, true}, {"decoder_post", PostNorm, true}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			cfg.Norm = c.norm
			want, wantNames := partsOutput(t, cfg, c.decoder)
			cfg.NewNorm = asLayerNorm
			got, names := partsOutput(t, cfg, c.decoder)
			require.Equal(t, wantNames, names)
			require.Equal(t, want, got, "a LayerNorm from NewNorm is the default")
			cfg.NewNorm = double
			got, names = partsOutput(t, cfg, c.decoder)
			require.Equal(t, wantNames, names)
			require.NotEqual(t, want, got, "the doubling norm is used")
		})
	}
	cfg := base
	cfg.Norm = PreNorm
	cfg.NewNorm = func(Scope, int) (Normalizer, error) { return nil, nil }
	s, err := NewStore()
	require.NoError(t, err)
	_, err = NewEncoderBlock(s.Root(), cfg)
	require.ErrorContains(t, err, "NewNorm returned no norm")
}

// gated is an MLP with a third linear: Out(act(In(x)) ⊙ Gate(x)), a
// non-default feed-forward whose use shows in a block's output and store.
type gated struct {
	*FeedForward
	Gate *Linear
}

func (m gated) Forward(g *Graph, x *gorgonia.Node) (*gorgonia.Node, error) {
	h, err := m.In.Forward(g, x)
	if err != nil {
		return nil, err
	}
	if h, err = Activate(h, m.Act); err != nil {
		return nil, err
	}
	gate, err := m.Gate.Forward(g, x)
	if err != nil {
		return nil, err
	}
	if h, err = gorgonia.HadamardProd(h, gate); err != nil {
		return nil, err
	}
	return m.Out.Forward(g, h)
}

// BlockConfig.NewMLP builds every block's feed-forward: a FeedForward
// built by NewMLP gives the default's output and names bit for bit, and a
// gated one changes the output and adds its gate to the store.
func TestBlockNewMLP(t *testing.T) {
	base := BlockConfig{Dim: 8, Heads: 2, FFNDim: 16, Activation: "gelu", LayerNormEps: 1e-5, Bias: true, Norm: PreNorm}
	asFeedForward := func(s Scope, c FeedForwardConfig) (MLP, error) { return NewFeedForward(s, c) }
	gate := func(s Scope, c FeedForwardConfig) (MLP, error) {
		f, err := NewFeedForward(s, c)
		if err != nil {
			return nil, err
		}
		l, err := NewLinear(s.Sub("gate_proj"), c.Dim, c.Hidden, false)
		return gated{f, l}, err
	}
	for _, decoder := range []bool{false, true} {
		cfg := base
		want, wantNames := partsOutput(t, cfg, decoder)
		cfg.NewMLP = asFeedForward
		got, names := partsOutput(t, cfg, decoder)
		require.Equal(t, wantNames, names)
		require.Equal(t, want, got, "a FeedForward from NewMLP is the default")
		cfg.NewMLP = gate
		got, names = partsOutput(t, cfg, decoder)
		require.NotEqual(t, want, got, "the gated feed-forward is used")
		require.Contains(t, names, "layers.1.gate_proj.weight")
	}
	s, err := NewStore()
	require.NoError(t, err)
	cfg := base
	cfg.NewMLP = gate
	b, err := NewEncoderBlock(s.Root(), cfg)
	require.NoError(t, err)
	require.Nil(t, b.FFN, "FFN is the default FeedForward only")
	require.IsType(t, gated{}, b.MLP)
	cfg.NewMLP = func(Scope, FeedForwardConfig) (MLP, error) { return nil, nil }
	_, err = NewEncoderBlock(s.Root().Sub("x"), cfg)
	require.ErrorContains(t, err, "NewMLP returned no feed-forward")
}

package layers

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/gradcheck"
)

// randInput binds a N(0,1) float64 input of the given shape.
func randInput(g *Graph, name string, seed uint64, shape ...int) *gorgonia.Node {
	rng := rand.New(rand.NewPCG(seed, 11))
	v := make([]float64, tensor.Shape(shape).TotalSize())
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	n := g.Input(name, shape...)
	if err := gorgonia.Let(n, tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))); err != nil {
		panic(err) // test helper: the shape is ours
	}
	return n
}

// keyMask is a (B, T) mask of ones with the listed (b, t) padded.
func keyMask(g *Graph, b, t int, padded ...[2]int) *gorgonia.Node {
	m := make([]float64, b*t)
	for i := range m {
		m[i] = 1
	}
	for _, p := range padded {
		m[p[0]*t+p[1]] = 0
	}
	n, err := g.Constant("mask", m, b, t)
	if err != nil {
		panic(err)
	}
	return n
}

var blockCfg = BlockConfig{Dim: 4, Heads: 2, FFNDim: 6, Activation: "gelu", LayerNormEps: 1e-5, Bias: true}

// layerCases build each layer on a float64 store with random parameters;
// build returns the output and the float inputs to differentiate.
var layerCases = []struct {
	name  string
	build func(s *Store, g *Graph) (*gorgonia.Node, gorgonia.Nodes, error)
}{
	{"linear", func(s *Store, g *Graph) (*gorgonia.Node, gorgonia.Nodes, error) {
		l, err := NewLinear(s.Root(), 3, 2, true)
		if err != nil {
			return nil, nil, err
		}
		x := randInput(g, "x", 1, 2, 2, 3)
		y, err := l.Forward(g, x)
		return y, gorgonia.Nodes{x}, err
	}},
	{"embedding+learned_positions", func(s *Store, g *Graph) (*gorgonia.Node, gorgonia.Nodes, error) {
		e, err := NewEmbedding(s.Root().Sub("wte"), 5, 3)
		if err != nil {
			return nil, nil, err
		}
		p, err := NewLearnedPositional(s.Root().Sub("wpe"), 4, 3)
		if err != nil {
			return nil, nil, err
		}
		ids, _ := g.IntConstant("ids", []int{1, 4, 4, 0, 2, 1}, 2, 3)
		h, err := e.Forward(g, ids)
		if err != nil {
			return nil, nil, err
		}
		y, err := p.Forward(g, h)
		return y, nil, err
	}},
	{"layernorm", func(s *Store, g *Graph) (*gorgonia.Node, gorgonia.Nodes, error) {
		n, err := NewLayerNorm(s.Root(), 5, 1e-5, true)
		if err != nil {
			return nil, nil, err
		}
		x := randInput(g, "x", 2, 3, 5)
		y, err := n.Forward(g, x)
		return y, gorgonia.Nodes{x}, err
	}},
	{"attention_self_causal_padded", func(s *Store, g *Graph) (*gorgonia.Node, gorgonia.Nodes, error) {
		a, err := NewMultiHeadAttention(s.Root(), AttentionConfig{Dim: 4, Heads: 2, Bias: true})
		if err != nil {
			return nil, nil, err
		}
		x := randInput(g, "x", 3, 2, 3, 4)
		y, err := a.Forward(g, x, nil, keyMask(g, 2, 3, [2]int{1, 2}), true)
		return y, gorgonia.Nodes{x}, err
	}},
	{"attention_cross", func(s *Store, g *Graph) (*gorgonia.Node, gorgonia.Nodes, error) {
		a, err := NewMultiHeadAttention(s.Root(), AttentionConfig{Dim: 4, Heads: 2})
		if err != nil {
			return nil, nil, err
		}
		x, mem := randInput(g, "x", 4, 2, 2, 4), randInput(g, "mem", 5, 2, 3, 4)
		y, err := a.Forward(g, x, mem, keyMask(g, 2, 3, [2]int{0, 0}), false)
		return y, gorgonia.Nodes{x, mem}, err
	}},
	{"feed_forward", func(s *Store, g *Graph) (*gorgonia.Node, gorgonia.Nodes, error) {
		f, err := NewFeedForward(s.Root(), FeedForwardConfig{Dim: 3, Hidden: 5, Activation: "gelu_new", Bias: true})
		if err != nil {
			return nil, nil, err
		}
		x := randInput(g, "x", 6, 2, 3)
		y, err := f.Forward(g, x)
		return y, gorgonia.Nodes{x}, err
	}},
	{"encoder_pre", encoderCase(PreNorm)},
	{"encoder_post", encoderCase(PostNorm)},
	{"decoder_pre", decoderCase(PreNorm)},
	{"decoder_post", decoderCase(PostNorm)},
	{"sinusoidal", func(s *Store, g *Graph) (*gorgonia.Node, gorgonia.Nodes, error) {
		p, err := NewSinusoidal(4, 10000)
		if err != nil {
			return nil, nil, err
		}
		x := randInput(g, "x", 7, 1, 3, 4)
		y, err := p.Forward(g, x)
		return y, gorgonia.Nodes{x}, err
	}},
	{"patch_embedding", func(s *Store, g *Graph) (*gorgonia.Node, gorgonia.Nodes, error) {
		p, err := NewPatchEmbedding(s.Root(), 2, 2, 3)
		if err != nil {
			return nil, nil, err
		}
		x := randInput(g, "img", 8, 1, 2, 4, 4)
		y, err := p.Forward(g, x)
		return y, gorgonia.Nodes{x}, err
	}},
}

func encoderCase(n Norm) func(s *Store, g *Graph) (*gorgonia.Node, gorgonia.Nodes, error) {
	return func(s *Store, g *Graph) (*gorgonia.Node, gorgonia.Nodes, error) {
		c := blockCfg
		c.Norm = n
		e, err := NewEncoder(s.Root(), c, 1)
		if err != nil {
			return nil, nil, err
		}
		x := randInput(g, "x", 9, 2, 3, 4)
		y, err := e.Forward(g, x, keyMask(g, 2, 3, [2]int{1, 2}))
		return y, gorgonia.Nodes{x}, err
	}
}

func decoderCase(n Norm) func(s *Store, g *Graph) (*gorgonia.Node, gorgonia.Nodes, error) {
	return func(s *Store, g *Graph) (*gorgonia.Node, gorgonia.Nodes, error) {
		c := blockCfg
		c.Norm, c.Activation = n, "relu"
		d, err := NewDecoder(s.Root(), c, 1)
		if err != nil {
			return nil, nil, err
		}
		x, mem := randInput(g, "x", 10, 2, 3, 4), randInput(g, "mem", 11, 2, 2, 4)
		y, err := d.Forward(g, x, keyMask(g, 2, 3, [2]int{0, 2}), mem, keyMask(g, 2, 2, [2]int{1, 1}))
		return y, gorgonia.Nodes{x, mem}, err
	}
}

// Finite differences in float64 for every layer, with respect to its inputs
// and all its parameters, masks included.
func TestLayerGradients(t *testing.T) {
	for _, c := range layerCases {
		t.Run(c.name, func(t *testing.T) {
			res, err := gradcheck.Check(func(eg *gorgonia.ExprGraph) (*gorgonia.Node, gorgonia.Nodes, error) {
				s, err := NewStore(WithDtype(tensor.Float64), WithSeed(3))
				if err != nil {
					return nil, nil, err
				}
				g := s.NewGraph()
				g.ExprGraph = eg
				y, wrt, err := c.build(s, g)
				if err != nil {
					return nil, nil, err
				}
				return y, append(wrt, g.Learnables()...), nil
			}, gradcheck.Options{Atol: 1e-6, Rtol: 1e-5})
			require.NoError(t, err)
			require.False(t, res.Failed, "%v", res)
		})
	}
}

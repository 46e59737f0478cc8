package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
)

// Dropout zeroes elements with probability P in training graphs and scales
// the rest by 1/(1−P); in evaluation graphs it is the identity. Its masks
// come from the graph's seed (see DropoutSeed), never from the clock.
type Dropout struct{ P float64 }

// NewDropout checks that p is in [0, 1).
func NewDropout(p float64) (Dropout, error) {
	if !(p >= 0 && p < 1) {
		return Dropout{}, fmt.Errorf("dropout: probability %g must be in [0, 1)", p)
	}
	return Dropout{P: p}, nil
}

// Forward maps x to a tensor of the same shape.
func (d Dropout) Forward(g *Graph, x *gorgonia.Node) (*gorgonia.Node, error) {
	if !g.train || d.P == 0 {
		return x, nil
	}
	return ops.Dropout(x, d.P, g.dropoutSite())
}

// Activation is an elementwise nonlinearity.
type Activation = ops.Act

// The activations.
const (
	ReLU     = ops.ReLU
	GELU     = ops.GELU     // exact, x·Φ(x)
	GELUTanh = ops.GELUTanh // the tanh approximation
	SiLU     = ops.SiLU     // x·σ(x), also called swish
)

// ParseActivation maps a Hugging Face `hidden_act`/`activation_function`
// name to an Activation: "relu"; "gelu" (exact); "gelu_new",
// "gelu_pytorch_tanh" or "gelu_tanh" (the tanh approximation); "silu" or
// "swish" (x·σ(x), which Hugging Face's ACT2FN maps to nn.SiLU).
func ParseActivation(name string) (Activation, error) {
	switch name {
	case "relu":
		return ReLU, nil
	case "gelu":
		return GELU, nil
	case "gelu_new", "gelu_pytorch_tanh", "gelu_tanh":
		return GELUTanh, nil
	case "silu", "swish":
		return SiLU, nil
	}
	return 0, fmt.Errorf("unknown activation %q: use relu, gelu, gelu_new, gelu_pytorch_tanh, gelu_tanh, silu or swish", name)
}

// Activate applies a to x elementwise; the shape is kept.
func Activate(x *gorgonia.Node, a Activation) (*gorgonia.Node, error) { return ops.Activate(x, a) }

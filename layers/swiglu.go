package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
)

var _ MLP = (*SwiGLU)(nil)

// SwiGLUConfig describes a SwiGLU feed-forward.
type SwiGLUConfig struct {
	Dim, Hidden int  // model width and inner width (intermediate_size)
	Bias        bool // biases on the three projections (mlp_bias)
	// Gate, Up and Down are the projections' scopes; empty: Hugging Face
	// LlamaMLP's "gate_proj", "up_proj", "down_proj".
	Gate, Up, Down string
}

// SwiGLU is the gated feed-forward of LLaMA-style decoders (Shazeer 2020,
// "GLU variants improve Transformer"), Hugging Face's LlamaMLP with
// hidden_act "silu":
//
//	Down(silu(Gate(x)) ⊙ Up(x))
//
// Gate and Up are (Hidden, Dim) linears, Down (Dim, Hidden); silu(g)⊙u is
// one fused op (ops.SwiGLU). It is an MLP: BlockConfig.NewMLP may return
// it (see SwiGLUs). Forward is safe for concurrent use on different
// graphs.
type SwiGLU struct {
	Gate, Up, Down *Linear
}

// NewSwiGLU creates the three projections in scope s.
func NewSwiGLU(s Scope, c SwiGLUConfig) (*SwiGLU, error) {
	if c.Dim <= 0 || c.Hidden <= 0 {
		return nil, fmt.Errorf("swiglu %s: width %d and inner width %d must be positive", s.prefix, c.Dim, c.Hidden)
	}
	names := [3]string{c.Gate, c.Up, c.Down}
	for i, d := range [3]string{"gate_proj", "up_proj", "down_proj"} {
		if names[i] == "" {
			names[i] = d
		}
	}
	f := &SwiGLU{}
	var err error
	if f.Gate, err = NewLinear(s.Sub(names[0]), c.Dim, c.Hidden, c.Bias); err != nil {
		return nil, err
	}
	if f.Up, err = NewLinear(s.Sub(names[1]), c.Dim, c.Hidden, c.Bias); err != nil {
		return nil, err
	}
	if f.Down, err = NewLinear(s.Sub(names[2]), c.Hidden, c.Dim, c.Bias); err != nil {
		return nil, err
	}
	return f, nil
}

// SwiGLUs returns a BlockConfig.NewMLP that builds a SwiGLU of the
// block's Dim and FFNDim in the block's sub-scope scope (Hugging Face's
// "mlp"; empty for the block's own scope), with biases when bias is set
// (mlp_bias). The block's Activation, Bias, FFN names and activation
// dropout do not apply: LlamaMLP has no dropout.
func SwiGLUs(scope string, bias bool) func(s Scope, c FeedForwardConfig) (MLP, error) {
	return func(s Scope, c FeedForwardConfig) (MLP, error) {
		if scope != "" {
			s = s.Sub(scope)
		}
		return NewSwiGLU(s, SwiGLUConfig{Dim: c.Dim, Hidden: c.Hidden, Bias: bias})
	}
}

// Forward maps x (..., Dim) to (..., Dim).
func (f *SwiGLU) Forward(g *Graph, x *gorgonia.Node) (*gorgonia.Node, error) {
	gate, err := f.Gate.Forward(g, x)
	if err != nil {
		return nil, err
	}
	up, err := f.Up.Forward(g, x)
	if err != nil {
		return nil, err
	}
	h, err := ops.SwiGLU(gate, up)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Gate.Weight.Name, err)
	}
	return f.Down.Forward(g, h)
}

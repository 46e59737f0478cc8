package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"
)

// MLP is a block's position-wise feed-forward: Forward maps x (..., D) to
// (..., D), D the model width. *FeedForward, Out(act(In(x))), is one;
// BlockConfig.NewMLP builds another (a gated one, say).
type MLP interface {
	Forward(g *Graph, x *gorgonia.Node) (*gorgonia.Node, error)
}

var _ MLP = (*FeedForward)(nil)

// FeedForwardConfig describes a position-wise FeedForward.
type FeedForwardConfig struct {
	Dim, Hidden int     // model width and inner width (4·Dim in most models)
	Activation  string  // see ParseActivation
	Dropout     float64 // dropout after the activation (training graphs)
	Bias        bool
	In, Out     string // scopes of the two layers; empty: "fc1", "fc2"
}

// FeedForward is Out(dropout(act(In(x)))).
type FeedForward struct {
	In, Out *Linear
	Act     Activation
	dropout Dropout
}

// NewFeedForward creates the two layers in scope s.
func NewFeedForward(s Scope, c FeedForwardConfig) (*FeedForward, error) {
	act, err := ParseActivation(c.Activation)
	if err != nil {
		return nil, fmt.Errorf("feed-forward %s: %w", s.prefix, err)
	}
	d, err := NewDropout(c.Dropout)
	if err != nil {
		return nil, fmt.Errorf("feed-forward %s: activation %w", s.prefix, err)
	}
	in, out := c.In, c.Out
	if in == "" {
		in = "fc1"
	}
	if out == "" {
		out = "fc2"
	}
	f := &FeedForward{Act: act, dropout: d}
	if f.In, err = NewLinear(s.Sub(in), c.Dim, c.Hidden, c.Bias); err != nil {
		return nil, err
	}
	if f.Out, err = NewLinear(s.Sub(out), c.Hidden, c.Dim, c.Bias); err != nil {
		return nil, err
	}
	return f, nil
}

// Forward maps x (..., Dim) to (..., Dim).
func (f *FeedForward) Forward(g *Graph, x *gorgonia.Node) (*gorgonia.Node, error) {
	h, err := f.In.Forward(g, x)
	if err != nil {
		return nil, err
	}
	if h, err = Activate(h, f.Act); err != nil {
		return nil, fmt.Errorf("%s: %w", f.In.Weight.Name, err)
	}
	if h, err = f.dropout.Forward(g, h); err != nil {
		return nil, err
	}
	return f.Out.Forward(g, h)
}

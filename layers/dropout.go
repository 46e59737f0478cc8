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

package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
)

// Normalizer is a block's normalisation layer: Forward maps x (..., D) to
// (..., D), normalised over the last dim D, the model width. *LayerNorm is
// one; BlockConfig.NewNorm builds another kind (an RMSNorm, say) in the
// places of a block's LayerNorms. (Norm names where they sit.)
type Normalizer interface {
	Forward(g *Graph, x *gorgonia.Node) (*gorgonia.Node, error)
}

var _ Normalizer = (*LayerNorm)(nil)

// LayerNorm normalises over the last dim with a learned scale ("weight",
// initialised to 1) and optional shift ("bias", initialised to 0), as
// torch.nn.LayerNorm.
type LayerNorm struct {
	Weight, Bias *Param // Bias is nil without a bias
	Dim          int
	Eps          float64
}

// NewLayerNorm creates a LayerNorm over width dim in scope s.
func NewLayerNorm(s Scope, dim int, eps float64, bias bool) (*LayerNorm, error) {
	if dim <= 0 || !(eps > 0) {
		return nil, fmt.Errorf("layer norm %s: need dim > 0 and eps > 0, got %d and %g", s.prefix, dim, eps)
	}
	n := &LayerNorm{Dim: dim, Eps: eps}
	var err error
	if n.Weight, err = s.Param("weight", []int{dim}, Constant(1)); err != nil {
		return nil, err
	}
	if bias {
		if n.Bias, err = s.Param("bias", []int{dim}, Constant(0)); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// Forward maps x (..., Dim) to the normalised (..., Dim).
func (n *LayerNorm) Forward(g *Graph, x *gorgonia.Node) (*gorgonia.Node, error) {
	var b *gorgonia.Node
	if n.Bias != nil {
		b = g.Node(n.Bias)
	}
	y, err := ops.LayerNorm(x, g.Node(n.Weight), b, n.Eps)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n.Weight.Name, err)
	}
	return y, nil
}

package layers

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
)

var _ Normalizer = (*RMSNorm)(nil)

// RMSNorm is root-mean-square normalisation over the last dim with a
// learned gain "weight" (initialised to 1) and no bias, as Hugging Face's
// LlamaRMSNorm: y = weight · x / sqrt(mean(x²) + Eps) (see ops.RMSNorm for
// the float32 rounding, which follows LlamaRMSNorm's). It is a Normalizer:
// BlockConfig.NewNorm may return it, so a block's norms are RMSNorms whose
// parameter is the norm scope's "weight" (input_layernorm.weight once a
// family names the scopes). Forward is safe for concurrent use on
// different graphs.
type RMSNorm struct {
	Weight *Param // (Dim)
	Dim    int
	Eps    float64 // rms_norm_eps
}

// NewRMSNorm creates an RMSNorm over width dim (> 0) with eps (> 0) in
// scope s.
func NewRMSNorm(s Scope, dim int, eps float64) (*RMSNorm, error) {
	if dim <= 0 || !(eps > 0) || math.IsInf(eps, 1) {
		return nil, fmt.Errorf("rms norm %s: need dim > 0 and a finite eps > 0, got %d and %g", s.prefix, dim, eps)
	}
	n := &RMSNorm{Dim: dim, Eps: eps}
	var err error
	if n.Weight, err = s.Param("weight", []int{dim}, Constant(1)); err != nil {
		return nil, err
	}
	return n, nil
}

// RMSNorms returns a BlockConfig.NewNorm that builds an RMSNorm with eps
// in each norm's scope.
func RMSNorms(eps float64) func(s Scope, dim int) (Normalizer, error) {
	return func(s Scope, dim int) (Normalizer, error) { return NewRMSNorm(s, dim, eps) }
}

// Forward maps x (..., Dim) to the normalised (..., Dim).
func (n *RMSNorm) Forward(g *Graph, x *gorgonia.Node) (*gorgonia.Node, error) {
	y, err := ops.RMSNorm(x, g.Node(n.Weight), n.Eps)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n.Weight.Name, err)
	}
	return y, nil
}

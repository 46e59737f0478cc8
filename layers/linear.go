package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	kernels "github.com/d73a19ff/zoo/internal/gemm"
	"github.com/d73a19ff/zoo/internal/ops"
)

// Linear is y = x·Wᵀ + b, with W stored (out, in) as in torch.nn.Linear.
// Its parameters are "weight" and, with a bias, "bias".
type Linear struct {
	Weight, Bias *Param // Bias is nil without a bias
	In, Out      int
	reduced      *kernels.Reduced // the weight in reduced precision, after Reduce
}

// NewLinear creates a Linear layer in scope s.
func NewLinear(s Scope, in, out int, bias bool) (*Linear, error) {
	if in <= 0 || out <= 0 {
		return nil, fmt.Errorf("linear %s: sizes in=%d out=%d must be positive", s.prefix, in, out)
	}
	l := &Linear{In: in, Out: out}
	var err error
	if l.Weight, err = s.Param("weight", []int{out, in}, s.store.weightInit(in)); err != nil {
		return nil, err
	}
	if bias {
		if l.Bias, err = s.Param("bias", []int{out}, s.store.biasInit(in)); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Forward maps x of shape (..., In) to (..., Out).
func (l *Linear) Forward(g *Graph, x *gorgonia.Node) (*gorgonia.Node, error) {
	var b *gorgonia.Node
	if l.Bias != nil {
		b = g.Node(l.Bias)
	}
	if l.reduced != nil {
		return ops.LinearReduced(x, l.reduced, l.Weight.Name, b)
	}
	y, err := ops.Linear(x, g.Node(l.Weight), b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.Weight.Name, err)
	}
	return y, nil
}

// AddBias adds b, a parameter or buffer of N values stored as (N) or
// (1, N), to every row of x (..., N) and returns (..., N); Hugging Face's
// final_logits_bias (1, V) is added to the logits this way.
func AddBias(g *Graph, x *gorgonia.Node, b *Param) (*gorgonia.Node, error) {
	n := b.Value.Size()
	bn := g.Node(b)
	if bn.Dims() != 1 {
		if b.Value.Dims() != 2 || b.Value.Shape()[0] != 1 {
			return nil, fmt.Errorf("%s: bias of shape %v must be (N) or (1, N)", b.Name, b.Value.Shape())
		}
		var err error
		if bn, err = gorgonia.Reshape(bn, tensor.Shape{n}); err != nil {
			return nil, fmt.Errorf("%s: %w", b.Name, err)
		}
	}
	y, err := ops.AddBroadcast(x, bn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name, err)
	}
	return y, nil
}

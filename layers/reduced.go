package layers

import (
	"fmt"

	"gorgonia.org/tensor"

	kernels "github.com/d73a19ff/zoo/internal/gemm"
)

// Reduce converts the layer's weight to format f (kernels.BF16 or
// kernels.Int8) for inference: Forward then multiplies with it, widening
// it to float32 inside the product (ops.LinearReduced), and the float32
// weight leaves the store s (its Param keeps only its name), so that its
// memory can be freed. The layer has no weight gradient after it: a graph
// that differentiates through Forward is refused. The store must be
// float32 and no graph may use the layer yet. The bias stays float32.
func (l *Linear) Reduce(s *Store, f kernels.Format) error {
	r, err := reduceParam(s, l.Weight, f)
	if err != nil {
		return err
	}
	l.reduced = r
	return nil
}

// Reduce converts the table to format f for inference, as Linear.Reduce
// does: Forward gathers rows widened to float32, and Logits multiplies
// with it.
func (e *Embedding) Reduce(s *Store, f kernels.Format) error {
	r, err := reduceParam(s, e.Weight, f)
	if err != nil {
		return err
	}
	e.reduced = r
	return nil
}

// ReducedBytes is the memory of the reduced weight, 0 before Reduce.
func (l *Linear) ReducedBytes() int64 { return l.reduced.Bytes() }

// ReducedBytes is the memory of the reduced table, 0 before Reduce.
func (e *Embedding) ReducedBytes() int64 { return e.reduced.Bytes() }

// reduceParam converts p, a float32 (rows, cols) parameter of s, to
// format f and takes it out of s, dropping its values.
func reduceParam(s *Store, p *Param, f kernels.Format) (*kernels.Reduced, error) {
	if p.Value == nil {
		return nil, fmt.Errorf("layers: %s is already in reduced precision", p.Name)
	}
	if p.Value.Dtype() != tensor.Float32 || p.Value.Dims() != 2 {
		return nil, fmt.Errorf("layers: %s is %v %v: only float32 matrices convert to %v; build the model in float32", p.Name, p.Value.Dtype(), p.Value.Shape(), f)
	}
	if q, ok := s.Param(p.Name); !ok || q != p {
		return nil, fmt.Errorf("layers: %s is not a parameter of this store", p.Name)
	}
	shape := p.Value.Shape()
	r, err := kernels.NewReduced(f, p.Value.Data().([]float32), shape[0], shape[1])
	if err != nil {
		return nil, fmt.Errorf("layers: %s: %w", p.Name, err)
	}
	if err := s.Remove(p.Name); err != nil {
		return nil, err
	}
	p.Value = nil
	return r, nil
}

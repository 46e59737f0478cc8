// Package ops holds the project's custom Gorgonia operations: fused kernels
// (LayerNorm, RMSNorm, GELU, SwiGLU, scaled masked softmax, fused attention
// with grouped key-value heads, cross-entropy), a BLAS-backed
// linear map and batched matmul, gathers, dropout and the head split/merge
// permutations used by attention, and rotary position embeddings.
//
// Every op implements gorgonia.Op and gorgonia.SDOp, runs in float32 and
// float64, validates shapes when the node is built (InferShape), and computes
// its gradient with further ops from this package. Gradient ops are first
// order only: they are not themselves differentiable. The exceptions are
// LinearReduced and GatherReduced, over weights held in bf16 or int8 for
// inference: float32 only, and differentiating through them is an error.
package ops

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Float is the set of element types the kernels run in.
type Float interface{ ~float32 | ~float64 }

// base carries the boilerplate every op shares: a name (also its hash), the
// arity, and the node type signature.
type base struct {
	name  string
	arity int
	buf   *tensor.Dense // the op's output, reused from run to run
	// slot and side are the op's buffers' places in a Pool, when a plan
	// put them there (see pool.go): side is a second buffer some ops keep
	// for their gradient op.
	slot, side *slot
	// seq is the op's place in the program its graph was planned into,
	// counting from 1, and tick that program's hook (Plan with Ticking).
	seq  int
	tick *Tick
	last *tensor.Dense // the tensor output gave this run
}

// output returns the op's output tensor for this run: the one from the last
// run when dtype and shape agree (Gorgonia's tape machine drops its registers
// on Reset, so without this every run reallocates every intermediate), else a
// new one. With zero it is cleared first, for kernels that do not write every
// element. Each node has its own op, so the buffer is never shared.
func (b *base) output(dt tensor.Dtype, shape tensor.Shape, zero bool) *tensor.Dense {
	if b.tick != nil {
		b.tick.at(b.seq)
	}
	b.last = b.buffer(dt, shape, zero)
	return b.last
}

// buffer is output's tensor.
func (b *base) buffer(dt tensor.Dtype, shape tensor.Shape, zero bool) *tensor.Dense {
	if b.slot != nil {
		if d := b.slot.dense(dt, shape); d != nil {
			if zero {
				zeroDense(d)
			}
			return d
		}
		b.slot.miss()
		b.slot = nil
	}
	if b.buf == nil || b.buf.Dtype() != dt || !b.buf.Shape().Eq(shape) {
		b.buf = newDense(dt, shape)
		return b.buf
	}
	if zero {
		zeroDense(b.buf)
	}
	return b.buf
}

// zeroDense clears a float tensor on all cores (a gradient scattered into
// a BERT word embedding's shape is 31 MB); other dtypes through Zero.
func zeroDense(d *tensor.Dense) {
	switch v := d.Data().(type) {
	case []float32:
		parallel.For(len(v), 1, func(lo, hi int) { clear(v[lo:hi]) })
	case []float64:
		parallel.For(len(v), 2, func(lo, hi int) { clear(v[lo:hi]) })
	default:
		d.Zero()
	}
}

func (b base) Arity() int            { return b.arity }
func (b base) ReturnsPtr() bool      { return false }
func (b base) CallsExtern() bool     { return false }
func (b base) OverwritesInput() int  { return -1 }
func (b base) String() string        { return b.name }
func (b base) WriteHash(h hash.Hash) { fmt.Fprint(h, b.name) }
func (b base) Hashcode() uint32 {
	h := fnv.New32a()
	b.WriteHash(h)
	return h.Sum32()
}

// tt is a tensor type with the given rank over a, or a itself when dims is 0.
func tt(dims int, of hm.Type) hm.Type {
	if dims == 0 {
		return of
	}
	return &gorgonia.TensorType{Dims: dims, Of: of}
}

var typeA = hm.TypeVariable('a')

// sameType is the signature a → a → … → a of an op whose inputs and output
// all share one tensor type.
func sameType(arity int) hm.Type {
	ts := make([]hm.Type, arity+1)
	for i := range ts {
		ts[i] = typeA
	}
	return hm.NewFnType(ts...)
}

// shapes converts the DimSizers gorgonia hands to InferShape.
func shapes(name string, in []gorgonia.DimSizer) ([]tensor.Shape, error) {
	out := make([]tensor.Shape, len(in))
	for i, d := range in {
		s, ok := d.(tensor.Shape)
		if !ok {
			return nil, fmt.Errorf("%s: input %d has no shape", name, i)
		}
		out[i] = s
	}
	return out, nil
}

// firstShape is the InferShape of an op whose output has its first input's
// shape.
func firstShape(name string, in []gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(name, in[:1])
	if err != nil {
		return nil, err
	}
	return s[0].Clone(), nil
}

// dense returns v as a contiguous *tensor.Dense.
func dense(name string, v gorgonia.Value) (*tensor.Dense, error) {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("%s: want a dense tensor, got %T", name, v)
	}
	if d.IsMaterializable() {
		d = d.Materialize().(*tensor.Dense)
	}
	return d, nil
}

// floats returns the values as dense tensors, checking that they all have the
// same float dtype, which is returned.
func floats(name string, vs ...gorgonia.Value) ([]*tensor.Dense, tensor.Dtype, error) {
	out := make([]*tensor.Dense, len(vs))
	var dt tensor.Dtype
	for i, v := range vs {
		d, err := dense(name, v)
		if err != nil {
			return nil, dt, err
		}
		if i == 0 {
			dt = d.Dtype()
			if dt != tensor.Float32 && dt != tensor.Float64 {
				return nil, dt, fmt.Errorf("%s: dtype %v is not supported, use float32 or float64", name, dt)
			}
		} else if d.Dtype() != dt {
			return nil, dt, fmt.Errorf("%s: input %d has dtype %v, input 0 has %v", name, i, d.Dtype(), dt)
		}
		out[i] = d
	}
	return out, dt, nil
}

// ints returns an integer tensor's values.
func ints(name string, v gorgonia.Value) ([]int, error) {
	d, err := dense(name, v)
	if err != nil {
		return nil, err
	}
	s, ok := d.Data().([]int)
	if !ok {
		return nil, fmt.Errorf("%s: want an int tensor, got %v", name, d.Dtype())
	}
	return s, nil
}

// scalar reads a float scalar value, as gorgonia passes a scalar gradient.
func scalar(name string, v gorgonia.Value) (float64, error) {
	switch s := v.(type) {
	case *gorgonia.F64:
		return float64(*s), nil
	case *gorgonia.F32:
		return float64(*s), nil
	case *tensor.Dense:
		switch d := s.Data().(type) {
		case float64:
			return d, nil
		case float32:
			return float64(d), nil
		case []float64:
			if len(d) == 1 {
				return d[0], nil
			}
		case []float32:
			if len(d) == 1 {
				return float64(d[0]), nil
			}
		}
	}
	return 0, fmt.Errorf("%s: want a float scalar, got %T", name, v)
}

// newDense allocates a zeroed tensor.
func newDense(dt tensor.Dtype, shape tensor.Shape) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape.Clone()...), tensor.Of(dt), tensor.WithEngine(engine))
}

// data returns the backing slice of a float tensor.
func data[T Float](d *tensor.Dense) []T { return d.Data().([]T) }

// isFloat32 picks the kernel instantiation.
func isFloat32(dt tensor.Dtype) bool { return dt == tensor.Float32 }

// prod multiplies dims.
func prod(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// checkFloatNode rejects a nil or non-float node when a graph is built.
func checkFloatNode(name, what string, n *gorgonia.Node) error {
	if n == nil {
		return fmt.Errorf("%s: %s is nil", name, what)
	}
	dt, err := dtypeOf(n)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", name, what, err)
	}
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return fmt.Errorf("%s: %s has dtype %v, want float32 or float64", name, what, dt)
	}
	return nil
}

// dtypeOf returns the element type of a node.
func dtypeOf(n *gorgonia.Node) (tensor.Dtype, error) {
	return dtypeOfType(n.Type())
}

func dtypeOfType(t hm.Type) (tensor.Dtype, error) {
	switch x := t.(type) {
	case tensor.Dtype:
		return x, nil
	case *gorgonia.TensorType:
		return dtypeOfType(x.Of)
	case gorgonia.TensorType:
		return dtypeOfType(x.Of)
	}
	return tensor.Dtype{}, fmt.Errorf("cannot tell the dtype of type %v", t)
}

// checkIntNode rejects a nil or non-int node when a graph is built.
func checkIntNode(name, what string, n *gorgonia.Node) error {
	if n == nil {
		return fmt.Errorf("%s: %s is nil", name, what)
	}
	dt, err := dtypeOf(n)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", name, what, err)
	}
	if dt != tensor.Int {
		return fmt.Errorf("%s: %s has dtype %v, want int (token ids)", name, what, dt)
	}
	return nil
}

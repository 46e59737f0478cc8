package ops

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// WriteSlots copies x (N, T, d) into rows [slot, slot+T) of cache (N, C, d)
// in place and returns cache, for attention over a key/value cache of fixed
// capacity C. slot is an int tensor of shape (1), set before each run, or
// of shape (B) with B dividing N: then each of the B rows (N/B cache rows
// each, a row's heads) is written at its own slot, which lets the rows of
// a running batch (continuous batching) sit at different lengths.
//
// It is the one impure op in the package: cache must be a graph input whose
// bound tensor outlives the run (the KV cache), and the op has no gradient.
// Writing past the capacity is an error at run time.
func WriteSlots(cache, x, slot *gorgonia.Node) (*gorgonia.Node, error) {
	const name = "write slots"
	if err := checkFloatNode(name, "cache", cache); err != nil {
		return nil, err
	}
	if err := checkFloatNode(name, "input", x); err != nil {
		return nil, err
	}
	if err := checkIntNode(name, "slot", slot); err != nil {
		return nil, err
	}
	cs, xs := cache.Shape(), x.Shape()
	if cache.Dims() != 3 || x.Dims() != 3 || cs[0] != xs[0] || cs[2] != xs[2] || xs[1] > cs[1] {
		return nil, fmt.Errorf("write slots: input %v does not fit cache %v, want (N, T ≤ C, d) for a cache (N, C, d)", xs, cs)
	}
	if ss := slot.Shape(); len(ss) != 1 || ss[0] < 1 || cs[0]%ss[0] != 0 {
		return nil, fmt.Errorf("write slots: slot %v must have shape (1), or (B) with B dividing the cache's %d rows", ss, cs[0])
	}
	return gorgonia.ApplyOp(&slotsOp{base: base{name: "WriteSlots", arity: 3}}, cache, x, slot)
}

type slotsOp struct{ base }

// aliasesInput implements aliaser: the op returns the cache it writes.
func (op *slotsOp) aliasesInput() bool { return true }

func (op *slotsOp) Type() hm.Type {
	return hm.NewFnType(tt(3, typeA), tt(3, typeA), tt(1, tensor.Int), tt(3, typeA))
}

func (op *slotsOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return firstShape(op.name, in)
}

func (op *slotsOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs[0], vs[1])
	if err != nil {
		return nil, err
	}
	slot, err := ints(op.name, vs[2])
	if err != nil {
		return nil, err
	}
	cache, x := ts[0], ts[1]
	n, c, d, t := cache.Shape()[0], cache.Shape()[1], cache.Shape()[2], x.Shape()[1]
	if len(slot) == 0 || n%len(slot) != 0 {
		return nil, fmt.Errorf("write slots: %d slots for a cache of %d rows", len(slot), n)
	}
	for _, s := range slot {
		if s < 0 || s+t > c {
			return nil, fmt.Errorf("write slots: %d rows at slot %d overflow the cache of %d", t, s, c)
		}
	}
	if isFloat32(dt) {
		copySlots(data[float32](cache), data[float32](x), n, c, t, d, slot)
	} else {
		copySlots(data[float64](cache), data[float64](x), n, c, t, d, slot)
	}
	return cache, nil
}

// copySlots writes cache row i at slot[i/(n/len(slot))].
func copySlots[T Float](cache, x []T, n, c, t, d int, slot []int) {
	per := n / len(slot)
	for i := 0; i < n; i++ {
		s := slot[i/per]
		copy(cache[(i*c+s)*d:(i*c+s+t)*d], x[i*t*d:(i+1)*t*d])
	}
}

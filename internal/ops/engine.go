package ops

import (
	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// fastEngine is Gorgonia's standard engine (the tape machine's default,
// tensor's standard engine with Gorgonia's Transpose) with Add spread over
// the cores.
//
// Gorgonia's autodiff sums the gradients of a node used more than once
// (a residual stream, a tied embedding) with gorgonia.Add, which runs
// tensor's Add on one core: 35 ms of a BERT-Mini pretraining step, the
// 7.8 M-float word-embedding gradient most of it. tensor.Add dispatches on
// its first operand's engine, so both the tensors this package's ops make
// and the values a tape machine allocates itself (MachineEngine: the
// outputs of Gorgonia's own ops, such as the first sum of a chained
// (a + b) + c) carry this engine. Only the forms the tape machine uses
// take the fast path (same-shape, contiguous, unmasked float32 or
// float64, into a reuse tensor, incrementing it, or in place);
// everything else, and every other operation, is the standard engine's.
// Float addition is element by element, so the bits are the same.
type fastEngine struct{ gorgonia.StandardEngine }

// engine is the engine of every tensor this package allocates.
var engine tensor.Engine = fastEngine{}

// Add is the standard engine's Add, on all cores for the tape machine's
// forms.
func (e fastEngine) Add(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	if out, ok := fastAdd(a, b, opts); ok {
		return out, nil
	}
	return e.StandardEngine.Add(a, b, opts...)
}

// MachineEngine is the engine for a tape machine (gorgonia.WithEngine),
// the one this package's tensors carry: without it the chained gradient
// sums ran on one core, about 2.4% of a GPT step on one core and so some
// 9% of it on 16.
func MachineEngine() tensor.Engine { return engine }

// fastAdd does a + b in parallel when it can, reporting whether it did.
func fastAdd(a, b tensor.Tensor, opts []tensor.FuncOpt) (tensor.Tensor, bool) {
	ad, ok := a.(*tensor.Dense)
	if !ok || !plainDense(ad) {
		return nil, false
	}
	bd, ok := b.(*tensor.Dense)
	if !ok || !plainDense(bd) || bd.Dtype() != ad.Dtype() || !bd.Shape().Eq(ad.Shape()) || ad.Shape().IsScalar() {
		return nil, false
	}
	fo := tensor.ParseFuncOpts(opts...)
	reuseT, incr := fo.IncrReuse()
	safe, same := fo.Safe(), fo.Same()
	if same {
		return nil, false
	}
	var dst *tensor.Dense
	switch {
	case reuseT != nil:
		rd, ok := reuseT.(*tensor.Dense)
		if !ok || !plainDense(rd) || rd.Dtype() != ad.Dtype() || rd.Size() != ad.Size() {
			return nil, false
		}
		if !rd.Shape().Eq(ad.Shape()) {
			if err := rd.Reshape(ad.Shape().Clone()...); err != nil {
				return nil, false
			}
		}
		dst = rd
	case !safe:
		dst = ad
	default:
		return nil, false // a new tensor: rare, left to the standard engine
	}
	switch x := ad.Data().(type) {
	case []float32:
		addSlices(x, bd.Data().([]float32), dst.Data().([]float32), incr)
	case []float64:
		addSlices(x, bd.Data().([]float64), dst.Data().([]float64), incr)
	default:
		return nil, false
	}
	return dst, true
}

// plainDense reports a tensor whose data is its backing slice in order.
func plainDense(d *tensor.Dense) bool {
	return d.IsNativelyAccessible() && !d.IsMasked() && !d.RequiresIterator() && !d.IsView()
}

// addSlices sets dst = a + b, or dst += a + b with incr, on all cores.
func addSlices[T Float](a, b, dst []T, incr bool) {
	parallel.For(len(dst), 1, func(lo, hi int) {
		x, y, z := a[lo:hi], b[lo:hi], dst[lo:hi]
		if incr {
			for i := range z {
				z[i] += x[i] + y[i]
			}
			return
		}
		for i := range z {
			z[i] = x[i] + y[i]
		}
	})
}

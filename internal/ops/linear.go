package ops

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Linear computes y = x·Wᵀ + b, as torch.nn.Linear does.
//
// x has shape (..., in); w has shape (out, in...) and is used as an (out, in)
// matrix with in = the product of its trailing dims (so a Conv2d weight
// (D, C, P, P) works on flattened patches); b, which may be nil, has shape
// (out). The result has shape (..., out).
func Linear(x, w, b *gorgonia.Node) (*gorgonia.Node, error) {
	const name = "linear"
	if err := checkFloatNode(name, "input", x); err != nil {
		return nil, err
	}
	if err := checkFloatNode(name, "weight", w); err != nil {
		return nil, err
	}
	if w.Dims() < 2 || x.Dims() < 1 {
		return nil, fmt.Errorf("linear: weight %v must be at least 2-D and input %v at least 1-D", w.Shape(), x.Shape())
	}
	in := prod(w.Shape()[1:])
	if got := x.Shape()[x.Dims()-1]; got != in {
		return nil, fmt.Errorf("linear: input %v has %d features, weight %v takes %d", x.Shape(), got, w.Shape(), in)
	}
	op := &linearOp{base: base{name: "Linear", arity: 2}, xDims: x.Dims(), wDims: w.Dims()}
	args := []*gorgonia.Node{x, w}
	if b != nil {
		if err := checkFloatNode(name, "bias", b); err != nil {
			return nil, err
		}
		if !b.Shape().Eq(tensor.Shape{w.Shape()[0]}) {
			return nil, fmt.Errorf("linear: bias %v does not fit weight %v, want (%d)", b.Shape(), w.Shape(), w.Shape()[0])
		}
		op.base = base{name: "LinearBias", arity: 3}
		args = append(args, b)
	}
	return gorgonia.ApplyOp(op, args...)
}

type linearOp struct {
	base
	xDims, wDims int
	bf16         bool // products in bfloat16 (UseBF16)
}

func (op *linearOp) Type() hm.Type {
	ts := []hm.Type{tt(op.xDims, typeA), tt(op.wDims, typeA)}
	if op.arity == 3 {
		ts = append(ts, tt(1, typeA))
	}
	return hm.NewFnType(append(ts, tt(op.xDims, typeA))...)
}

func (op *linearOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(op.name, in)
	if err != nil {
		return nil, err
	}
	out := s[0].Clone()
	out[len(out)-1] = s[1][0]
	return out, nil
}

func (op *linearOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	x, w := ts[0], ts[1]
	outF := w.Shape()[0]
	in := w.Size() / outF
	n := x.Size() / in
	shape := x.Shape().Clone()
	shape[len(shape)-1] = outF
	y := op.output(dt, shape, false)
	if isFloat32(dt) {
		linearFwd(op.bf16, data[float32](x), data[float32](w), biasOf[float32](ts), data[float32](y), n, in, outF)
	} else {
		linearFwd(false, data[float64](x), data[float64](w), biasOf[float64](ts), data[float64](y), n, in, outF)
	}
	return y, nil
}

func biasOf[T Float](ts []*tensor.Dense) []T {
	if len(ts) < 3 {
		return nil
	}
	return data[T](ts[2])
}

func linearFwd[T Float](bf16 bool, x, w, b, y []T, n, in, out int) {
	if b32, ok := any(b).([]float32); ok && b32 != nil && in > 0 {
		// The bias goes into y inside the product, tile by tile: a pass
		// of its own over y was 3% of a ViT training step.
		x32, w32, y32 := any(x).([]float32), any(w).([]float32), any(y).([]float32)
		if bf16 {
			sgemmBF16Bias(false, true, n, out, in, x32, in, w32, in, b32, y32, out)
			return
		}
		sgemmBias(false, true, n, out, in, x32, in, w32, in, b32, y32, out)
		return
	}
	var beta T
	if b != nil {
		for r := 0; r < n; r++ {
			copy(y[r*out:(r+1)*out], b)
		}
		beta = 1
	}
	gemmAs(bf16, false, true, n, out, in, x, w, beta, y)
}

func (op *linearOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = true
	}
	return d
}

func (op *linearOp) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	x, w := in[0], in[1]
	gx, gw := newMatGrad("LinearGradInput", x.Shape(), true, grad.Dims(), w.Dims()), newMatGrad("LinearGradWeight", w.Shape(), false, grad.Dims(), x.Dims())
	gx.bf16, gw.bf16 = op.bf16, op.bf16
	dx, err := gorgonia.ApplyOp(gx, grad, w)
	if err != nil {
		return nil, fmt.Errorf("linear grad input: %w", err)
	}
	dw, err := gorgonia.ApplyOp(gw, grad, x)
	if err != nil {
		return nil, fmt.Errorf("linear grad weight: %w", err)
	}
	res := gorgonia.Nodes{dx, dw}
	if len(in) == 3 {
		db, err := SumLeading(grad, 1)
		if err != nil {
			return nil, fmt.Errorf("linear grad bias: %w", err)
		}
		res = append(res, db)
	}
	return res, nil
}

// matGradOp computes the gradients of y = x·Wᵀ from dy (..., out):
// for the input, dx = dy·W with the input's shape; for the weight,
// dW = dyᵀ·x with the weight's shape.
type matGradOp struct {
	base
	outShape          tensor.Shape
	wrtInput          bool
	dyDims, otherDims int
	bf16              bool // products in bfloat16 (UseBF16)
}

func newMatGrad(name string, outShape tensor.Shape, wrtInput bool, dyDims, otherDims int) *matGradOp {
	return &matGradOp{
		base:     base{name: fmt.Sprintf("%s%v", name, outShape), arity: 2},
		outShape: outShape.Clone(), wrtInput: wrtInput, dyDims: dyDims, otherDims: otherDims,
	}
}

func (op *matGradOp) Type() hm.Type {
	return hm.NewFnType(tt(op.dyDims, typeA), tt(op.otherDims, typeA), tt(len(op.outShape), typeA))
}

func (op *matGradOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return op.outShape.Clone(), nil
}

func (op *matGradOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	dy, other := ts[0], ts[1]
	out := op.output(dt, op.outShape, false)
	outF := dy.Shape()[dy.Dims()-1]
	n := dy.Size() / outF
	if op.wrtInput { // dx (n, in) = dy (n, out) · W (out, in)
		in := other.Size() / outF
		if isFloat32(dt) {
			gemmAs(op.bf16, false, false, n, in, outF, data[float32](dy), data[float32](other), 0, data[float32](out))
		} else {
			gemm(false, false, n, in, outF, data[float64](dy), data[float64](other), 0, data[float64](out))
		}
		return out, nil
	}
	// dW (out, in) = dyᵀ (out, n) · x (n, in)
	in := other.Size() / n
	if isFloat32(dt) {
		gemmAs(op.bf16, true, false, outF, in, n, data[float32](dy), data[float32](other), 0, data[float32](out))
	} else {
		gemm(true, false, outF, in, n, data[float64](dy), data[float64](other), 0, data[float64](out))
	}
	return out, nil
}

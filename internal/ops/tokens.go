package ops

import (
	"fmt"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// PrependToken puts a learned token (D) before every sequence of x (B, N, D),
// giving (B, N+1, D): ViT's class token.
func PrependToken(x, token *gorgonia.Node) (*gorgonia.Node, error) {
	if err := checkFloatNode("prepend token", "input", x); err != nil {
		return nil, err
	}
	if err := checkFloatNode("prepend token", "token", token); err != nil {
		return nil, err
	}
	if x.Dims() != 3 || token.Shape().TotalSize() != x.Shape()[2] {
		return nil, fmt.Errorf("prepend token: token %v does not fit input %v, want (B, N, D) and D values", token.Shape(), x.Shape())
	}
	return gorgonia.ApplyOp(&prependOp{base: base{name: "PrependToken", arity: 2}, tokDims: token.Dims()}, x, token)
}

type prependOp struct {
	base
	tokDims  int
	wrtX     bool // gradient: (dy) → dx when wrtX, else dtoken
	tokShape tensor.Shape
}

func (op *prependOp) Type() hm.Type {
	switch {
	case op.tokShape == nil:
		return hm.NewFnType(tt(3, typeA), tt(op.tokDims, typeA), tt(3, typeA))
	case op.wrtX:
		return hm.NewFnType(tt(3, typeA), tt(3, typeA))
	}
	return hm.NewFnType(tt(3, typeA), tt(len(op.tokShape), typeA))
}

func (op *prependOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(op.name, in[:1])
	if err != nil {
		return nil, err
	}
	switch {
	case op.tokShape == nil:
		return tensor.Shape{s[0][0], s[0][1] + 1, s[0][2]}, nil
	case op.wrtX:
		return tensor.Shape{s[0][0], s[0][1] - 1, s[0][2]}, nil
	}
	return op.tokShape.Clone(), nil
}

func (op *prependOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	s := ts[0].Shape()
	b, n, d := s[0], s[1], s[2]
	var out *tensor.Dense
	switch {
	case op.tokShape == nil:
		out = op.output(dt, tensor.Shape{b, n + 1, d}, false)
	case op.wrtX:
		out = op.output(dt, tensor.Shape{b, n - 1, d}, false)
	default:
		out = op.output(dt, op.tokShape, true)
	}
	if isFloat32(dt) {
		prependKernel(ts, data[float32](out), b, n, d, op.tokShape == nil, op.wrtX)
	} else {
		prependKernel(ts, data[float64](out), b, n, d, op.tokShape == nil, op.wrtX)
	}
	return out, nil
}

// prependKernel runs the forward (x, token → y) or one of the gradients:
// dy (B, N+1, D) → dx = dy[:, 1:] or dtoken = Σ_b dy[b, 0].
func prependKernel[T Float](ts []*tensor.Dense, out []T, b, n, d int, forward, wrtX bool) {
	in := data[T](ts[0])
	for i := 0; i < b; i++ {
		switch {
		case forward:
			copy(out[i*(n+1)*d:], data[T](ts[1])[:d])
			copy(out[(i*(n+1)+1)*d:(i+1)*(n+1)*d], in[i*n*d:(i+1)*n*d])
		case wrtX:
			copy(out[i*(n-1)*d:(i+1)*(n-1)*d], in[(i*n+1)*d:(i+1)*n*d])
		default:
			for j, v := range in[i*n*d : i*n*d+d] {
				out[j] += v
			}
		}
	}
}

func (op *prependOp) DiffWRT(int) []bool { return []bool{true, true} }

func (op *prependOp) SymDiff(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	ts := in[1].Shape().Clone()
	dx, err := gorgonia.ApplyOp(&prependOp{base: base{name: "PrependTokenGradInput", arity: 1}, wrtX: true, tokShape: ts}, grad)
	if err != nil {
		return nil, fmt.Errorf("prepend token grad: %w", err)
	}
	dt, err := gorgonia.ApplyOp(&prependOp{base: base{name: fmt.Sprintf("PrependTokenGradToken%v", ts), arity: 1}, tokShape: ts}, grad)
	if err != nil {
		return nil, fmt.Errorf("prepend token grad: %w", err)
	}
	return gorgonia.Nodes{dx, dt}, nil
}

// SelectTokens picks one position per row of x (B, T, D) by int index (B),
// giving (B, D): ViT's class token, or GPT's last non-padding token for
// sequence classification. An index outside [0, T) is an error at run time.
func SelectTokens(x, index *gorgonia.Node) (*gorgonia.Node, error) {
	if err := checkFloatNode("select tokens", "input", x); err != nil {
		return nil, err
	}
	if err := checkIntNode("select tokens", "index", index); err != nil {
		return nil, err
	}
	if x.Dims() != 3 || !index.Shape().Eq(tensor.Shape{x.Shape()[0]}) {
		return nil, fmt.Errorf("select tokens: index %v does not fit input %v, want (B) for (B, T, D)", index.Shape(), x.Shape())
	}
	return gorgonia.ApplyOp(&selectOp{base: base{name: "SelectTokens", arity: 2}, x: x.Shape().Clone()}, x, index)
}

type selectOp struct {
	base
	x    tensor.Shape // (B, T, D)
	grad bool         // (dy (B, D), index) → dx (B, T, D)
}

func (op *selectOp) Type() hm.Type {
	if op.grad {
		return hm.NewFnType(tt(2, typeA), tt(1, tensor.Int), tt(3, typeA))
	}
	return hm.NewFnType(tt(3, typeA), tt(1, tensor.Int), tt(2, typeA))
}

func (op *selectOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	if op.grad {
		return op.x.Clone(), nil
	}
	return tensor.Shape{op.x[0], op.x[2]}, nil
}

func (op *selectOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs[0])
	if err != nil {
		return nil, err
	}
	idx, err := ints(op.name, vs[1])
	if err != nil {
		return nil, err
	}
	b, t, d := op.x[0], op.x[1], op.x[2]
	for i, j := range idx {
		if j < 0 || j >= t {
			return nil, fmt.Errorf("select tokens: row %d index %d is outside [0, %d)", i, j, t)
		}
	}
	var out *tensor.Dense
	if op.grad {
		out = op.output(dt, op.x, true)
	} else {
		out = op.output(dt, tensor.Shape{b, d}, false)
	}
	if isFloat32(dt) {
		selectKernel(data[float32](ts[0]), data[float32](out), idx, t, d, op.grad)
	} else {
		selectKernel(data[float64](ts[0]), data[float64](out), idx, t, d, op.grad)
	}
	return out, nil
}

func selectKernel[T Float](in, out []T, idx []int, t, d int, grad bool) {
	for i, j := range idx {
		if grad {
			copy(out[(i*t+j)*d:(i*t+j+1)*d], in[i*d:(i+1)*d])
		} else {
			copy(out[i*d:(i+1)*d], in[(i*t+j)*d:(i*t+j+1)*d])
		}
	}
}

func (op *selectOp) DiffWRT(int) []bool { return []bool{true, false} }

func (op *selectOp) SymDiff(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dx, err := gorgonia.ApplyOp(&selectOp{base: base{name: fmt.Sprintf("SelectTokensGrad%v", op.x), arity: 2}, x: op.x, grad: true}, grad, in[1])
	if err != nil {
		return nil, fmt.Errorf("select tokens grad: %w", err)
	}
	return gorgonia.Nodes{dx, nil}, nil
}

package ops

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RMSNorm scales x by the reciprocal root mean square of its last dim D
// and a learned gain (Zhang & Sennrich 2019, "Root mean square layer
// normalization"), as Hugging Face's LlamaRMSNorm:
//
//	y = weight · x / sqrt(mean(x²) + eps)
//
// x has shape (..., D), weight (D); y has x's shape. The mean of squares
// is accumulated in float64 (in float32 work, in float32 vector lanes, as
// LlamaRMSNorm's float32 mean); in float32 x·rsqrt is rounded to float32
// before the gain multiplies it, as LlamaRMSNorm's float32 computation
// followed by weight · hidden.to(dtype) does.
func RMSNorm(x, weight *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	const name = "rms norm"
	if err := checkFloatNode(name, "input", x); err != nil {
		return nil, err
	}
	if err := checkFloatNode(name, "weight", weight); err != nil {
		return nil, err
	}
	if !(eps > 0) || math.IsInf(eps, 1) {
		return nil, fmt.Errorf("rms norm: eps %g must be positive and finite", eps)
	}
	if x.Dims() < 1 {
		return nil, fmt.Errorf("rms norm: input %v must have a last dim", x.Shape())
	}
	d := x.Shape()[x.Dims()-1]
	if !weight.Shape().Eq(tensor.Shape{d}) {
		return nil, fmt.Errorf("rms norm: weight %v does not fit input %v, want (%d)", weight.Shape(), x.Shape(), d)
	}
	if dx, dw := x.Dtype(), weight.Dtype(); dx != dw {
		return nil, fmt.Errorf("rms norm: input has dtype %v, weight %v", dx, dw)
	}
	op := &rmsNormOp{base: base{name: fmt.Sprintf("RMSNorm(%g)", eps), arity: 2}, eps: eps, dims: x.Dims()}
	return gorgonia.ApplyOp(op, x, weight)
}

type rmsNormOp struct {
	base
	eps  float64
	dims int
	// wantGrad is set by SymDiff: forward runs then keep each row's
	// 1/rms in rstd, which the gradient ops read.
	wantGrad bool
	rstd     []float64
}

func (op *rmsNormOp) Type() hm.Type {
	return hm.NewFnType(tt(op.dims, typeA), tt(1, typeA), tt(op.dims, typeA))
}

func (op *rmsNormOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return firstShape(op.name, in)
}

func (op *rmsNormOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	d := ts[1].Size()
	if xs := ts[0].Shape(); len(xs) == 0 || xs[len(xs)-1] != d {
		return nil, fmt.Errorf("%s: weight (%d) does not fit input %v", op.name, d, xs)
	}
	y := op.output(dt, ts[0].Shape(), false)
	var rstd []float64
	if op.wantGrad && d > 0 {
		rows := ts[0].Size() / d
		if k := op.side.float64s(rows); k != nil {
			op.rstd = k
		} else if len(op.rstd) != rows {
			op.side.miss()
			op.side = nil
			op.rstd = make([]float64, rows)
		}
		rstd = op.rstd
	}
	if isFloat32(dt) {
		rmsNormFwd32(data[float32](ts[0]), data[float32](ts[1]), data[float32](y), rstd, op.eps)
	} else {
		rmsNormFwd(data[float64](ts[0]), data[float64](ts[1]), data[float64](y), rstd, op.eps)
	}
	return y, nil
}

// bufBytes implements bufSizer: with gradients, the forward op keeps one
// float64 per row.
func (op *rmsNormOp) bufBytes(n *gorgonia.Node) (buf, side int64, outputInBuf bool) {
	if op.wantGrad {
		sh := n.Shape()
		if d := sh[len(sh)-1]; d > 0 {
			side = int64(sh.TotalSize()/d) * 8
		}
	}
	return outputBytes(n), side, true
}

// rmsRstd is 1/sqrt(mean(row²) + eps), accumulated in float64.
func rmsRstd[T Float](row []T, eps float64) float64 {
	return 1 / math.Sqrt(dot64(row, row)/float64(len(row))+eps)
}

// dot64 is Σ a·b accumulated in float64, in four interleaved partial sums
// (added in a fixed order) so that the additions do not wait on each other.
func dot64[T Float](a, b []T) float64 {
	var s0, s1, s2, s3 float64
	n := len(a) &^ 3
	b = b[:len(a)]
	for i := 0; i < n; i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for i := n; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// rmsNormFwd writes y = w · T(x·rstd) row by row; rstd, if not nil,
// receives each row's 1/rms.
func rmsNormFwd[T Float](x, w, y []T, rstd []float64, eps float64) {
	d := len(w)
	if d == 0 {
		return
	}
	parallel.For(len(x)/d, 2*d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*d:(r+1)*d], y[r*d:(r+1)*d]
			rs := rmsRstd(xr, eps)
			s := T(rs)
			for i, v := range xr {
				yr[i] = w[i] * T(v*s)
			}
			if rstd != nil {
				rstd[r] = rs
			}
		}
	})
}

func (op *rmsNormOp) DiffWRT(int) []bool { return []bool{true, true} }

func (op *rmsNormOp) SymDiff(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	op.wantGrad = true
	res := make(gorgonia.Nodes, 2)
	for i, what := range []string{"Input", "Weight"} {
		g := &rmsNormGradOp{base: base{name: fmt.Sprintf("RMSNormGrad%s(%g)", what, op.eps), arity: 3}, dims: op.dims, wrtInput: i == 0, fwd: op}
		n, err := gorgonia.ApplyOp(g, in[0], in[1], grad)
		if err != nil {
			return nil, fmt.Errorf("rms norm grad %s: %w", what, err)
		}
		res[i] = n
	}
	return res, nil
}

// rmsNormGradOp maps (x, weight, dy) to dx (x's shape) or dweight (D).
type rmsNormGradOp struct {
	base
	dims     int
	wrtInput bool
	fwd      *rmsNormOp // whose kept 1/rms it reads
}

// forwardBase implements forwarded.
func (op *rmsNormGradOp) forwardBase() (*base, bool) { return &op.fwd.base, false }

func (*rmsNormGradOp) ownsResult() {}

func (op *rmsNormGradOp) Type() hm.Type {
	out := tt(1, typeA)
	if op.wrtInput {
		out = tt(op.dims, typeA)
	}
	return hm.NewFnType(tt(op.dims, typeA), tt(1, typeA), tt(op.dims, typeA), out)
}

func (op *rmsNormGradOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(op.name, in)
	if err != nil {
		return nil, err
	}
	if op.wrtInput {
		return s[0].Clone(), nil
	}
	return s[1].Clone(), nil
}

func (op *rmsNormGradOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	shape := ts[1].Shape()
	if op.wrtInput {
		shape = ts[0].Shape()
	}
	out := op.output(dt, shape, !op.wrtInput) // dweight accumulates
	d := ts[1].Size()
	if d == 0 {
		return out, nil
	}
	if len(op.fwd.rstd) != ts[0].Size()/d {
		return nil, fmt.Errorf("%s: gradient ran before its forward pass", op.name)
	}
	if isFloat32(dt) {
		rmsNormBwd32(data[float32](ts[0]), data[float32](ts[1]), data[float32](ts[2]), data[float32](out), op.fwd.rstd, op.wrtInput)
	} else {
		rmsNormBwd(data[float64](ts[0]), data[float64](ts[1]), data[float64](ts[2]), data[float64](out), op.fwd.rstd, op.wrtInput)
	}
	return out, nil
}

// rmsNormBwd writes dx = rstd·(ĝ − x̂·mean(ĝ·x̂)) with ĝ = dy·w and
// x̂ = x·rstd when wrtInput, else accumulates dw = Σ_rows dy·x̂.
func rmsNormBwd[T Float](x, w, dy, out []T, rstd []float64, wrtInput bool) {
	d := len(w)
	rows := len(x) / d
	if !wrtInput {
		// Cores split the columns, so no two write the same element.
		parallel.For(d, rows, func(lo, hi int) {
			for r := 0; r < rows; r++ {
				s := T(rstd[r])
				xr, dyr := x[r*d+lo:r*d+hi], dy[r*d+lo:r*d+hi]
				for i, v := range xr {
					out[lo+i] += dyr[i] * T(v*s)
				}
			}
		})
		return
	}
	parallel.For(rows, 3*d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, dyr, or := x[r*d:(r+1)*d], dy[r*d:(r+1)*d], out[r*d:(r+1)*d]
			rs := rstd[r]
			// ĝ = dy·w into the output row first, then Σ ĝ·x.
			for i, v := range dyr {
				or[i] = v * w[i]
			}
			m := T(dot64(or, xr) * rs * rs / float64(d)) // mean(ĝ·x̂)/rstd
			s := T(rs)
			for i, v := range xr {
				or[i] = s * (or[i] - v*m)
			}
		}
	})
}

// rmsNormFwd32 is rmsNormFwd on the row primitives of vec.go (LayerNorm's,
// with mean 0): Σx² in float32 lanes, as Hugging Face's float32 mean.
func rmsNormFwd32(x, w, y []float32, rstd []float64, eps float64) {
	d := len(w)
	if d == 0 {
		return
	}
	parallel.For(len(x)/d, d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr := x[r*d : (r+1)*d]
			rs := 1 / math.Sqrt(float64(vecDot(xr, xr))/float64(d)+eps)
			vecLNAffine(xr, w, nil, y[r*d:(r+1)*d], 0, float32(rs))
			if rstd != nil {
				rstd[r] = rs
			}
		}
	})
}

// rmsNormBwd32 is rmsNormBwd on the row primitives of vec.go.
func rmsNormBwd32(x, w, dy, out []float32, rstd []float64, wrtInput bool) {
	d := len(w)
	rows := len(x) / d
	if !wrtInput {
		parallel.For(d, rows, func(lo, hi int) {
			for r := 0; r < rows; r++ {
				vecLNGammaAcc(x[r*d+lo:r*d+hi], dy[r*d+lo:r*d+hi], out[lo:hi], 0, float32(rstd[r]))
			}
		})
		return
	}
	parallel.For(rows, 2*d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, dyr := x[r*d:(r+1)*d], dy[r*d:(r+1)*d]
			rs := rstd[r]
			_, sgx := vecLNGradSums(xr, w, dyr, 0)
			c2 := float32(float64(sgx) * rs * rs / float64(d)) // mean(ĝ·x̂)/rstd
			vecLNGradApply(xr, w, dyr, out[r*d:(r+1)*d], 0, float32(rs), c2, 0)
		}
	})
}

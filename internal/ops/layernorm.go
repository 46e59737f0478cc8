package ops

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"github.com/d73a19ff/zoo/internal/parallel"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LayerNorm normalises x over its last dim D and applies the affine map:
// y = (x − mean) / sqrt(var + eps) · gamma + beta, with the biased variance,
// as torch.nn.LayerNorm. x has shape (..., D); gamma (D); beta (D) or nil for
// no bias. y has x's shape.
func LayerNorm(x, gamma, beta *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	const name = "layer norm"
	if err := checkFloatNode(name, "input", x); err != nil {
		return nil, err
	}
	if err := checkFloatNode(name, "weight", gamma); err != nil {
		return nil, err
	}
	if eps <= 0 || math.IsNaN(eps) {
		return nil, fmt.Errorf("layer norm: eps %g must be positive", eps)
	}
	d := x.Shape()[x.Dims()-1]
	want := tensor.Shape{d}
	if !gamma.Shape().Eq(want) {
		return nil, fmt.Errorf("layer norm: weight %v does not fit input %v, want (%d)", gamma.Shape(), x.Shape(), d)
	}
	args := gorgonia.Nodes{x, gamma}
	if beta != nil {
		if err := checkFloatNode(name, "bias", beta); err != nil {
			return nil, err
		}
		if !beta.Shape().Eq(want) {
			return nil, fmt.Errorf("layer norm: bias %v does not fit input %v, want (%d)", beta.Shape(), x.Shape(), d)
		}
		args = append(args, beta)
	}
	op := &layerNormOp{base: base{name: fmt.Sprintf("LayerNorm(%g)", eps), arity: len(args)}, eps: eps, dims: x.Dims()}
	return gorgonia.ApplyOp(op, args...)
}

type layerNormOp struct {
	base
	eps  float64
	dims int
	// wantGrad is set by SymDiff: forward runs then keep each row's mean
	// and 1/std in stats (two values per row), which the gradient ops read
	// instead of computing them again.
	wantGrad bool
	stats    []float64
}

func (op *layerNormOp) Type() hm.Type {
	ts := []hm.Type{tt(op.dims, typeA), tt(1, typeA)}
	if op.arity == 3 {
		ts = append(ts, tt(1, typeA))
	}
	return hm.NewFnType(append(ts, tt(op.dims, typeA))...)
}

func (op *layerNormOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	return firstShape(op.name, in)
}

func (op *layerNormOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	y := op.output(dt, ts[0].Shape(), false)
	var stats []float64
	if op.wantGrad {
		rows := 2 * ts[0].Size() / ts[1].Size()
		if k := op.side.float64s(rows); k != nil {
			op.stats = k
		} else if len(op.stats) != rows {
			op.side.miss()
			op.side = nil
			op.stats = make([]float64, rows)
		}
		stats = op.stats
	}
	if isFloat32(dt) {
		layerNormFwd32(data[float32](ts[0]), data[float32](ts[1]), biasOf[float32](ts), data[float32](y), stats, op.eps)
	} else {
		layerNormFwd(data[float64](ts[0]), data[float64](ts[1]), biasOf[float64](ts), data[float64](y), stats, op.eps)
	}
	return y, nil
}

// bufBytes implements bufSizer: with gradients, the forward op keeps two
// float64 statistics per row.
func (op *layerNormOp) bufBytes(n *gorgonia.Node) (buf, side int64, outputInBuf bool) {
	if op.wantGrad {
		sh := n.Shape()
		side = int64(sh.TotalSize()/sh[len(sh)-1]) * 16
	}
	return outputBytes(n), side, true
}

// rowStats returns the mean and 1/sqrt(var+eps) of one row, accumulated in
// float64.
func rowStats[T Float](row []T, eps float64) (mean, rstd float64) {
	for _, v := range row {
		mean += float64(v)
	}
	mean /= float64(len(row))
	var v2 float64
	for _, v := range row {
		d := float64(v) - mean
		v2 += d * d
	}
	return mean, 1 / math.Sqrt(v2/float64(len(row))+eps)
}

// layerNormFwd normalises every row; stats, if not nil, receives each
// row's mean and 1/std.
func layerNormFwd[T Float](x, g, b, y []T, stats []float64, eps float64) {
	d := len(g)
	parallel.For(len(x)/d, d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			mean, rstd := layerNormRow(x[r*d:(r+1)*d], g, b, y[r*d:(r+1)*d], eps)
			if stats != nil {
				stats[2*r], stats[2*r+1] = mean, rstd
			}
		}
	})
}

func layerNormRow[T Float](xr, g, b, yr []T, eps float64) (mean, rstd float64) {
	mean, rstd = rowStats(xr, eps)
	m, s := T(mean), T(rstd)
	for i, v := range xr {
		yr[i] = (v - m) * s * g[i]
	}
	if b != nil {
		for i := range yr {
			yr[i] += b[i]
		}
	}
	return mean, rstd
}

func (op *layerNormOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = true
	}
	return d
}

func (op *layerNormOp) SymDiff(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	x, gamma := in[0], in[1]
	op.wantGrad = true
	dx, err := gorgonia.ApplyOp(&layerNormGradOp{base: base{name: fmt.Sprintf("LayerNormGradInput(%g)", op.eps), arity: 3}, eps: op.eps, dims: op.dims, wrtInput: true, fwd: op}, x, gamma, grad)
	if err != nil {
		return nil, fmt.Errorf("layer norm grad input: %w", err)
	}
	dg, err := gorgonia.ApplyOp(&layerNormGradOp{base: base{name: fmt.Sprintf("LayerNormGradWeight(%g)", op.eps), arity: 3}, eps: op.eps, dims: op.dims, fwd: op}, x, gamma, grad)
	if err != nil {
		return nil, fmt.Errorf("layer norm grad weight: %w", err)
	}
	res := gorgonia.Nodes{dx, dg}
	if len(in) == 3 {
		db, err := SumLeading(grad, 1)
		if err != nil {
			return nil, fmt.Errorf("layer norm grad bias: %w", err)
		}
		res = append(res, db)
	}
	return res, nil
}

// layerNormGradOp maps (x, gamma, dy) to dx (x's shape) or to dgamma (D).
type layerNormGradOp struct {
	base
	eps      float64
	dims     int
	wrtInput bool
	fwd      *layerNormOp // whose kept statistics it reads
}

// forwardBase implements forwarded.
func (op *layerNormGradOp) forwardBase() (*base, bool) { return &op.fwd.base, false }

func (op *layerNormGradOp) Type() hm.Type {
	out := tt(1, typeA)
	if op.wrtInput {
		out = tt(op.dims, typeA)
	}
	return hm.NewFnType(tt(op.dims, typeA), tt(1, typeA), tt(op.dims, typeA), out)
}

func (op *layerNormGradOp) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(op.name, in)
	if err != nil {
		return nil, err
	}
	if op.wrtInput {
		return s[0].Clone(), nil
	}
	return s[1].Clone(), nil
}

func (op *layerNormGradOp) Do(vs ...gorgonia.Value) (gorgonia.Value, error) {
	ts, dt, err := floats(op.name, vs...)
	if err != nil {
		return nil, err
	}
	shape := ts[1].Shape()
	if op.wrtInput {
		shape = ts[0].Shape()
	}
	out := op.output(dt, shape, !op.wrtInput) // dgamma accumulates
	stats := op.fwd.stats
	if len(stats) != 2*ts[0].Size()/ts[1].Size() {
		return nil, fmt.Errorf("%s: gradient ran before its forward pass", op.name)
	}
	if isFloat32(dt) {
		layerNormBwd32(data[float32](ts[0]), data[float32](ts[1]), data[float32](ts[2]), data[float32](out), stats, op.wrtInput)
	} else {
		layerNormBwd(data[float64](ts[0]), data[float64](ts[1]), data[float64](ts[2]), data[float64](out), stats, op.wrtInput)
	}
	return out, nil
}

// layerNormBwd writes dx = rstd·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)) with ĝ = dy·gamma
// when wrtInput, else accumulates dgamma = Σ_rows dy·x̂.
// stats is scratch for dgamma: two values per row.
func layerNormBwd[T Float](x, g, dy, out []T, stats []float64, wrtInput bool) {
	d := len(g)
	if !wrtInput {
		// dgamma = Σ_rows dy·x̂, from the forward pass's row statistics:
		// cores split the columns, so no two write the same element.
		rows := len(x) / d
		parallel.For(d, rows, func(lo, hi int) {
			for r := 0; r < rows; r++ {
				mean, rstd := stats[2*r], stats[2*r+1]
				xr, dyr := x[r*d+lo:r*d+hi], dy[r*d+lo:r*d+hi]
				for i, v := range xr {
					out[lo+i] += dyr[i] * T((float64(v)-mean)*rstd)
				}
			}
		})
		return
	}
	parallel.For(len(x)/d, 2*d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			layerNormRowGrad(x[r*d:(r+1)*d], g, dy[r*d:(r+1)*d], out[r*d:(r+1)*d], stats[2*r], stats[2*r+1])
		}
	})
}

func layerNormRowGrad[T Float](xr, g, dyr, or []T, mean, rstd float64) {
	d := len(g)
	var sg, sgx float64
	for i, v := range xr {
		gh := float64(dyr[i]) * float64(g[i])
		sg += gh
		sgx += gh * (float64(v) - mean) * rstd
	}
	sg /= float64(d)
	sgx /= float64(d)
	for i, v := range xr {
		xh := (float64(v) - mean) * rstd
		or[i] = T(rstd * (float64(dyr[i])*float64(g[i]) - sg - xh*sgx))
	}
}

// layerNormFwd32 is layerNormFwd on the row primitives of vec.go: the
// statistics by the corrected two-pass algorithm in float32 lanes (see
// meanVar), then the affine map.
func layerNormFwd32(x, g, b, y []float32, stats []float64, eps float64) {
	d := len(g)
	if d == 0 {
		return
	}
	parallel.For(len(x)/d, d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			mean, rstd := rowStats32(x[r*d:(r+1)*d], eps)
			vecLNAffine(x[r*d:(r+1)*d], g, b, y[r*d:(r+1)*d], mean, float32(rstd))
			if stats != nil {
				stats[2*r], stats[2*r+1] = float64(mean), rstd
			}
		}
	})
}

// rowStats32 is rowStats for float32 rows: the mean and 1/sqrt(var+eps),
// the latter in float64.
func rowStats32(row []float32, eps float64) (float32, float64) {
	mean, variance := vecMeanVar(row)
	return mean, 1 / math.Sqrt(float64(variance)+eps)
}

// layerNormBwd32 is layerNormBwd on the row primitives of vec.go.
func layerNormBwd32(x, g, dy, out []float32, stats []float64, wrtInput bool) {
	d := len(g)
	if d == 0 {
		return
	}
	rows := len(x) / d
	if !wrtInput {
		parallel.For(d, rows, func(lo, hi int) {
			for r := 0; r < rows; r++ {
				vecLNGammaAcc(x[r*d+lo:r*d+hi], dy[r*d+lo:r*d+hi], out[lo:hi], float32(stats[2*r]), float32(stats[2*r+1]))
			}
		})
		return
	}
	parallel.For(rows, 2*d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, dyr := x[r*d:(r+1)*d], dy[r*d:(r+1)*d]
			mean, rstd := float32(stats[2*r]), stats[2*r+1]
			sg, sgx := vecLNGradSums(xr, g, dyr, mean)
			mg, mgx := float64(sg)/float64(d), float64(sgx)*rstd/float64(d)
			vecLNGradApply(xr, g, dyr, out[r*d:(r+1)*d], mean, float32(rstd), float32(rstd*mgx), float32(mg))
		}
	})
}

package ops

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// This file rebuilds every fused op of the package from Gorgonia's own
// primitives and checks that the two agree in value and in gradient. The
// composed references are also what bench_test.go measures the fused ops
// against.
//
// Gorgonia v0.9.18 pitfalls avoided here: InverseSqrt has a wrong gradient
// (Sqrt then a division is used instead), broadcasting ops are given explicit
// patterns, and values are read only through gorgonia.Read, never from the
// nodes of a TapeMachine, which may reuse intermediate registers.

// scalarOf is a scalar constant of dtype dt.
func scalarOf(dt tensor.Dtype, v float64) *gorgonia.Node {
	if dt == tensor.Float32 {
		return gorgonia.NewConstant(float32(v))
	}
	return gorgonia.NewConstant(v)
}

// denseOf is a tensor of dtype dt holding v.
func denseOf(dt tensor.Dtype, shape tensor.Shape, v []float64) *tensor.Dense {
	if dt == tensor.Float32 {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(f))
	}
	return tensor.New(tensor.WithShape(shape.Clone()...), tensor.WithBacking(append([]float64(nil), v...)))
}

// asDtype converts a float64 tensor to dt.
func asDtype(d *tensor.Dense, dt tensor.Dtype) *tensor.Dense {
	return denseOf(dt, d.Shape(), d.Data().([]float64))
}

// scaled returns a copy of a float64 tensor multiplied by k.
func scaled(d *tensor.Dense, k float64) *tensor.Dense {
	v := append([]float64(nil), d.Data().([]float64)...)
	for i := range v {
		v[i] *= k
	}
	return tensor.New(tensor.WithShape(d.Shape().Clone()...), tensor.WithBacking(v))
}

// composedLayerNorm is LayerNorm from primitives: x is viewed as (N, D) rows,
// y = (x − mean) / sqrt(mean((x − mean)²) + eps) ⊙ gamma + beta.
func composedLayerNorm(x, gamma, beta *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	shape := x.Shape().Clone()
	d := shape[len(shape)-1]
	rows, err := gorgonia.Reshape(x, tensor.Shape{shape.TotalSize() / d, d})
	if err != nil {
		return nil, err
	}
	mean, err := gorgonia.Mean(rows, 1)
	if err != nil {
		return nil, err
	}
	xc, err := gorgonia.BroadcastSub(rows, mean, nil, []byte{1})
	if err != nil {
		return nil, err
	}
	sq, err := gorgonia.Square(xc)
	if err != nil {
		return nil, err
	}
	variance, err := gorgonia.Mean(sq, 1)
	if err != nil {
		return nil, err
	}
	ve, err := gorgonia.Add(variance, scalarOf(x.Dtype(), eps))
	if err != nil {
		return nil, err
	}
	std, err := gorgonia.Sqrt(ve) // not InverseSqrt: its gradient is wrong in v0.9.18
	if err != nil {
		return nil, err
	}
	xh, err := gorgonia.BroadcastHadamardDiv(xc, std, nil, []byte{1})
	if err != nil {
		return nil, err
	}
	y, err := gorgonia.BroadcastHadamardProd(xh, gamma, nil, []byte{0})
	if err != nil {
		return nil, err
	}
	if beta != nil {
		if y, err = gorgonia.BroadcastAdd(y, beta, nil, []byte{0}); err != nil {
			return nil, err
		}
	}
	return gorgonia.Reshape(y, shape)
}

// Coefficients of Abramowitz & Stegun, Handbook of Mathematical Functions
// (1964), formula 7.1.26: for z ≥ 0,
//
//	erf(z) ≈ 1 − (a1·t + a2·t² + a3·t³ + a4·t⁴ + a5·t⁵)·exp(−z²), t = 1/(1 + p·z),
//
// with |error| ≤ 1.5e-7.
var (
	asP = 0.3275911
	asA = [5]float64{0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429}
)

// composedErf is erf from primitives by A&S 7.1.26 (|error| ≤ 1.5e-7),
// extended to negative z by oddness: erf(z) = sign(z)·erf(|z|). Gorgonia has
// no Erf. Sign is not differentiable in Gorgonia and is treated as a constant,
// which is its derivative almost everywhere.
func composedErf(z *gorgonia.Node) (*gorgonia.Node, error) {
	dt := z.Dtype()
	az, err := gorgonia.Abs(z)
	if err != nil {
		return nil, err
	}
	pz, err := gorgonia.Mul(az, scalarOf(dt, asP))
	if err != nil {
		return nil, err
	}
	den, err := gorgonia.Add(pz, scalarOf(dt, 1))
	if err != nil {
		return nil, err
	}
	t, err := gorgonia.Inverse(den)
	if err != nil {
		return nil, err
	}
	// Horner: poly = t·(a1 + t·(a2 + t·(a3 + t·(a4 + t·a5)))).
	poly, err := gorgonia.Mul(t, scalarOf(dt, asA[4]))
	if err != nil {
		return nil, err
	}
	for k := 3; k >= 0; k-- {
		if poly, err = gorgonia.Add(poly, scalarOf(dt, asA[k])); err != nil {
			return nil, err
		}
		if poly, err = gorgonia.HadamardProd(poly, t); err != nil {
			return nil, err
		}
	}
	z2, err := gorgonia.Square(az)
	if err != nil {
		return nil, err
	}
	nz2, err := gorgonia.Neg(z2)
	if err != nil {
		return nil, err
	}
	e, err := gorgonia.Exp(nz2)
	if err != nil {
		return nil, err
	}
	pe, err := gorgonia.HadamardProd(poly, e)
	if err != nil {
		return nil, err
	}
	erfAbs, err := gorgonia.Sub(scalarOf(dt, 1), pe)
	if err != nil {
		return nil, err
	}
	sign, err := gorgonia.Sign(z)
	if err != nil {
		return nil, err
	}
	return gorgonia.HadamardProd(sign, erfAbs)
}

// composedGELU is the exact GELU x·Φ(x) = 0.5·x·(1 + erf(x/√2)) with erf
// from composedErf, so it matches the fused op to about 1e-7·|x|.
func composedGELU(x *gorgonia.Node) (*gorgonia.Node, error) {
	dt := x.Dtype()
	z, err := gorgonia.Mul(x, scalarOf(dt, 1/math.Sqrt2))
	if err != nil {
		return nil, err
	}
	erf, err := composedErf(z)
	if err != nil {
		return nil, err
	}
	return halfXTimesOnePlus(x, erf)
}

// halfXTimesOnePlus returns 0.5·x ⊙ (1 + v).
func halfXTimesOnePlus(x, v *gorgonia.Node) (*gorgonia.Node, error) {
	dt := x.Dtype()
	onePlus, err := gorgonia.Add(v, scalarOf(dt, 1))
	if err != nil {
		return nil, err
	}
	half, err := gorgonia.Mul(x, scalarOf(dt, 0.5))
	if err != nil {
		return nil, err
	}
	return gorgonia.HadamardProd(half, onePlus)
}

// composedGELUTanh is 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func composedGELUTanh(x *gorgonia.Node) (*gorgonia.Node, error) {
	dt := x.Dtype()
	x3, err := gorgonia.Cube(x)
	if err != nil {
		return nil, err
	}
	cx3, err := gorgonia.Mul(x3, scalarOf(dt, 0.044715))
	if err != nil {
		return nil, err
	}
	inner, err := gorgonia.Add(x, cx3)
	if err != nil {
		return nil, err
	}
	u, err := gorgonia.Mul(inner, scalarOf(dt, math.Sqrt(2/math.Pi)))
	if err != nil {
		return nil, err
	}
	th, err := gorgonia.Tanh(u)
	if err != nil {
		return nil, err
	}
	return halfXTimesOnePlus(x, th)
}

// maskBig is the additive bias that removes a key from a softmax.
const maskBig = 1e9

// causalBias is the constant (Tq, Tk) bias: −1e9 where key j is in the future
// of query i, that is j > i + (Tk − Tq), else 0.
func causalBias(dt tensor.Dtype, tq, tk int) *tensor.Dense {
	v := make([]float64, tq*tk)
	for i := range tq {
		for j := range tk {
			if j > i+tk-tq {
				v[i*tk+j] = -maskBig
			}
		}
	}
	return denseOf(dt, tensor.Shape{tq, tk}, v)
}

// composedMaskedSoftmax is MaskedSoftmax from primitives:
// SoftMax(scale·s + bias) over the last axis, where the bias is
// −1e9·(1 − mask) broadcast over heads and queries plus the constant causal
// bias broadcast over the B·h score matrices. Unlike the fused op, a row with
// no key left comes out uniform rather than zero.
func composedMaskedSoftmax(s, mask *gorgonia.Node, scale float64, causal bool) (*gorgonia.Node, error) {
	dt := s.Dtype()
	sh := s.Shape().Clone()
	bh, tq, tk := sh[0], sh[1], sh[2]
	z, err := gorgonia.Mul(s, scalarOf(dt, scale))
	if err != nil {
		return nil, err
	}
	if mask != nil {
		b := mask.Shape()[0]
		mm1, err := gorgonia.Sub(mask, scalarOf(dt, 1))
		if err != nil {
			return nil, err
		}
		bias, err := gorgonia.Mul(mm1, scalarOf(dt, maskBig)) // −1e9·(1 − mask), (B, Tk)
		if err != nil {
			return nil, err
		}
		z4, err := gorgonia.Reshape(z, tensor.Shape{b, bh / b, tq, tk})
		if err != nil {
			return nil, err
		}
		if z4, err = gorgonia.BroadcastAdd(z4, bias, nil, []byte{1, 2}); err != nil {
			return nil, err
		}
		if z, err = gorgonia.Reshape(z4, sh); err != nil {
			return nil, err
		}
	}
	if causal {
		c := gorgonia.NewConstant(causalBias(dt, tq, tk), gorgonia.WithName(fmt.Sprintf("causal bias %dx%d", tq, tk)), gorgonia.In(s.Graph()))
		if z, err = gorgonia.BroadcastAdd(z, c, nil, []byte{0}); err != nil {
			return nil, err
		}
	}
	return gorgonia.SoftMax(z, 2)
}

// composedCrossEntropy is CrossEntropy from primitives: with the constant
// target matrix Y, whose row r is (1−ε)·onehot(t_r) + ε/V, or zero when t_r
// is ignoreIndex, the loss is −Σ(LogSoftMax(logits) ⊙ Y) / count.
func composedCrossEntropy(logits *gorgonia.Node, targets []int, ignoreIndex int, smoothing float64) (*gorgonia.Node, error) {
	dt := logits.Dtype()
	ls := logits.Shape()
	v := ls[len(ls)-1]
	n := ls.TotalSize() / v
	if len(targets) != n {
		return nil, fmt.Errorf("composed cross entropy: %d targets for %d rows", len(targets), n)
	}
	y := make([]float64, n*v)
	count := 0
	for r, t := range targets {
		if t == ignoreIndex {
			continue
		}
		count++
		for j := range v {
			y[r*v+j] = smoothing / float64(v)
		}
		y[r*v+t] += 1 - smoothing
	}
	rows, err := gorgonia.Reshape(logits, tensor.Shape{n, v})
	if err != nil {
		return nil, err
	}
	lsm, err := gorgonia.LogSoftMax(rows, 1)
	if err != nil {
		return nil, err
	}
	yc := gorgonia.NewConstant(denseOf(dt, tensor.Shape{n, v}, y), gorgonia.WithName(fmt.Sprintf("smoothed one-hot %dx%d", n, v)), gorgonia.In(logits.Graph()))
	prod, err := gorgonia.HadamardProd(lsm, yc)
	if err != nil {
		return nil, err
	}
	total, err := gorgonia.Sum(prod)
	if err != nil {
		return nil, err
	}
	k := 0.0
	if count > 0 {
		k = -1 / float64(count)
	}
	return gorgonia.Mul(total, scalarOf(dt, k))
}

// objective is L = Σ out ⊙ R, or out·R for a scalar out, R a fixed random
// tensor of out's shape (seed 99).
func objective(out *gorgonia.Node) (*gorgonia.Node, error) {
	dt := out.Dtype()
	if out.IsScalar() {
		return gorgonia.Mul(out, scalarOf(dt, 0.75))
	}
	r := gorgonia.NewConstant(asDtype(randDense(99, out.Shape()...), dt), gorgonia.WithName("objective weights"), gorgonia.In(out.Graph()))
	prod, err := gorgonia.HadamardProd(out, r)
	if err != nil {
		return nil, err
	}
	return gorgonia.Sum(prod)
}

// floatsOf returns a float value's elements as float64s.
func floatsOf(t *testing.T, v gorgonia.Value) []float64 {
	t.Helper()
	switch x := v.(type) {
	case *gorgonia.F64:
		return []float64{float64(*x)}
	case *gorgonia.F32:
		return []float64{float64(*x)}
	case *tensor.Dense:
		switch d := x.Data().(type) {
		case []float64:
			return append([]float64(nil), d...)
		case []float32:
			f := make([]float64, len(d))
			for i, e := range d {
				f[i] = float64(e)
			}
			return f
		case float64:
			return []float64{d}
		case float32:
			return []float64{float64(d)}
		}
	}
	t.Fatalf("value %T is not a float", v)
	return nil
}

// refCase is one configuration of a fused op and its composed reference.
type refCase struct {
	name string
	// inputs are float64 values; the first nDiff are differentiated, the
	// rest (masks) are not.
	inputs []*tensor.Dense
	nDiff  int
	// fused and composed build the op on nodes bound to inputs.
	fused, composed func(in []*gorgonia.Node) (*gorgonia.Node, error)
	// valTol and gradTol bound |composed − fused| in float64.
	valTol, gradTol float64
}

// refResult is the output value and the gradient of objective w.r.t. each
// differentiated input.
type refResult struct {
	out   []float64
	grads [][]float64
}

// runRef builds one side of a case in dtype dt and runs it forward and back.
func runRef(t *testing.T, c refCase, dt tensor.Dtype, build func([]*gorgonia.Node) (*gorgonia.Node, error)) refResult {
	t.Helper()
	g := gorgonia.NewGraph()
	in := make([]*gorgonia.Node, len(c.inputs))
	for i, v := range c.inputs {
		in[i] = input(g, fmt.Sprintf("in%d", i), asDtype(v, dt))
	}
	out, err := build(in)
	require.NoError(t, err)
	require.Equal(t, dt, out.Dtype())
	loss, err := objective(out)
	require.NoError(t, err)
	grads, err := gorgonia.Grad(loss, in[:c.nDiff]...)
	require.NoError(t, err)

	var outV gorgonia.Value
	gorgonia.Read(out, &outV)
	gradV := make([]gorgonia.Value, len(grads))
	for i, gn := range grads {
		gorgonia.Read(gn, &gradV[i])
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	require.NoError(t, m.RunAll())

	res := refResult{out: floatsOf(t, outV)}
	for i, v := range gradV {
		gv := floatsOf(t, v)
		require.Len(t, gv, c.inputs[i].Shape().TotalSize(), "gradient of input %d", i)
		res.grads = append(res.grads, gv)
	}
	return res
}

// requireClose fails unless |got − want| ≤ tol·(1 + |want|) elementwise.
func requireClose(t *testing.T, want, got []float64, tol float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	worst, at := 0.0, -1
	for i := range want {
		d := math.Abs(got[i]-want[i]) / (1 + math.Abs(want[i]))
		if math.IsNaN(d) || d > worst {
			worst, at = d, i
			if math.IsNaN(d) {
				break
			}
		}
	}
	if at >= 0 && (math.IsNaN(worst) || worst > tol) {
		t.Fatalf("%s: element %d is %.12g, want %.12g (scaled error %.3g > %.3g)", what, at, got[at], want[at], worst, tol)
	}
}

// mask2 builds a (B, Tk) mask from rows of 0s and 1s.
func mask2(rows ...[]float64) *tensor.Dense {
	var v []float64
	for _, r := range rows {
		v = append(v, r...)
	}
	return tensor.New(tensor.WithShape(len(rows), len(rows[0])), tensor.WithBacking(v))
}

func layerNormCases() []refCase {
	var cs []refCase
	for _, bias := range []bool{true, false} {
		for _, shape := range [][]int{{2, 3, 5}, {4, 6}} {
			d := shape[len(shape)-1]
			in := []*tensor.Dense{scaled(randDense(1, shape...), 3), randDense(2, d)}
			if bias {
				in = append(in, randDense(3, d))
			}
			args := func(n []*gorgonia.Node) (x, g, b *gorgonia.Node) {
				if len(n) == 3 {
					b = n[2]
				}
				return n[0], n[1], b
			}
			cs = append(cs, refCase{
				name:   fmt.Sprintf("LayerNorm/bias=%v/%v", bias, shape),
				inputs: in, nDiff: len(in),
				fused: func(n []*gorgonia.Node) (*gorgonia.Node, error) {
					x, g, b := args(n)
					return LayerNorm(x, g, b, 1e-5)
				},
				composed: func(n []*gorgonia.Node) (*gorgonia.Node, error) {
					x, g, b := args(n)
					return composedLayerNorm(x, g, b, 1e-5)
				},
				valTol: 1e-9, gradTol: 1e-9,
			})
		}
	}
	return cs
}

func geluCases() []refCase {
	x := scaled(randDense(4, 6, 7), 2) // spans about ±5: both signs and the tails
	return []refCase{{
		name:   "GELU/6x7",
		inputs: []*tensor.Dense{x}, nDiff: 1,
		fused:    func(n []*gorgonia.Node) (*gorgonia.Node, error) { return Activate(n[0], GELU) },
		composed: func(n []*gorgonia.Node) (*gorgonia.Node, error) { return composedGELU(n[0]) },
		// A&S 7.1.26 is good to 1.5e-7 in erf; its derivative is off by
		// a few times that.
		valTol: 1e-6, gradTol: 2e-6,
	}, {
		name:   "GELUTanh/6x7",
		inputs: []*tensor.Dense{x}, nDiff: 1,
		fused:    func(n []*gorgonia.Node) (*gorgonia.Node, error) { return Activate(n[0], GELUTanh) },
		composed: func(n []*gorgonia.Node) (*gorgonia.Node, error) { return composedGELUTanh(n[0]) },
		valTol:   1e-9, gradTol: 1e-9,
	}}
}

func softmaxCases() []refCase {
	// B = 2, h = 3. Every row keeps at least one key, since for a row with
	// none the fused op gives zeros and the composed one a uniform row.
	pad44 := mask2([]float64{1, 1, 1, 0}, []float64{1, 1, 0, 0})
	pad35 := mask2([]float64{1, 1, 1, 1, 0}, []float64{1, 0, 1, 0, 0})
	type sc struct {
		name   string
		tq, tk int
		mask   *tensor.Dense
		scale  float64
		causal bool
	}
	var cs []refCase
	for _, s := range []sc{
		{"nomask", 4, 4, nil, 0.5, false},
		{"padding", 4, 4, pad44, 0.5, false},
		{"causal", 4, 4, nil, 0.7, true},
		{"padding+causal", 4, 4, pad44, 0.7, true},
		{"Tq<Tk/padding", 3, 5, pad35, 1, false},
		{"Tq<Tk/causal", 3, 5, nil, 1, true},
		{"Tq<Tk/padding+causal", 3, 5, pad35, 0.35, true},
	} {
		in := []*tensor.Dense{scaled(randDense(5, 6, s.tq, s.tk), 2)}
		if s.mask != nil {
			in = append(in, s.mask)
		}
		maskOf := func(n []*gorgonia.Node) *gorgonia.Node {
			if len(n) == 2 {
				return n[1]
			}
			return nil
		}
		cs = append(cs, refCase{
			name:   "MaskedSoftmax/" + s.name,
			inputs: in, nDiff: 1,
			fused: func(n []*gorgonia.Node) (*gorgonia.Node, error) {
				return MaskedSoftmax(n[0], maskOf(n), s.scale, s.causal)
			},
			composed: func(n []*gorgonia.Node) (*gorgonia.Node, error) {
				return composedMaskedSoftmax(n[0], maskOf(n), s.scale, s.causal)
			},
			valTol: 1e-9, gradTol: 1e-9,
		})
	}
	return cs
}

func crossEntropyCases() []refCase {
	type cc struct {
		name      string
		shape     []int
		targets   []int
		ignore    int
		smoothing float64
	}
	var cs []refCase
	for _, c := range []cc{
		{"2d", []int{6, 5}, []int{0, 4, 2, 3, 1, 3}, -100, 0},
		{"2d/smooth", []int{6, 5}, []int{0, 4, 2, 3, 1, 3}, -100, 0.1},
		{"2d/ignored", []int{6, 5}, []int{0, 4, -100, 3, -100, 1}, -100, 0},
		{"2d/ignored/smooth", []int{6, 5}, []int{0, 4, -100, 3, -100, 1}, -100, 0.1},
		{"3d/ignored/smooth", []int{2, 3, 5}, []int{1, -100, 4, 0, 2, -100}, -100, 0.1},
		{"3d/ignore=class0", []int{2, 3, 5}, []int{1, 0, 4, 0, 2, 3}, 0, 0.1},
	} {
		in := []*tensor.Dense{scaled(randDense(6, c.shape...), 3)}
		tshape := c.shape[:len(c.shape)-1]
		cs = append(cs, refCase{
			name:   fmt.Sprintf("CrossEntropy/%s/%v", c.name, c.shape),
			inputs: in, nDiff: 1,
			fused: func(n []*gorgonia.Node) (*gorgonia.Node, error) {
				tg := intInput(n[0].Graph(), "targets", tshape, append([]int(nil), c.targets...))
				return CrossEntropy(n[0], tg, c.ignore, c.smoothing)
			},
			composed: func(n []*gorgonia.Node) (*gorgonia.Node, error) {
				return composedCrossEntropy(n[0], c.targets, c.ignore, c.smoothing)
			},
			valTol: 1e-9, gradTol: 1e-9,
		})
	}
	return cs
}

func allRefCases() []refCase {
	var cs []refCase
	cs = append(cs, layerNormCases()...)
	cs = append(cs, geluCases()...)
	cs = append(cs, softmaxCases()...)
	return append(cs, crossEntropyCases()...)
}

// TestFusedMatchesComposed checks each fused op against its composed
// reference in float64, in value and in the gradient of Σ out ⊙ R w.r.t.
// every float input that is differentiated.
func TestFusedMatchesComposed(t *testing.T) {
	for _, c := range allRefCases() {
		t.Run(c.name, func(t *testing.T) {
			want := runRef(t, c, tensor.Float64, c.composed)
			got := runRef(t, c, tensor.Float64, c.fused)
			requireClose(t, want.out, got.out, c.valTol, "value")
			require.Len(t, got.grads, c.nDiff)
			for i := range want.grads {
				requireClose(t, want.grads[i], got.grads[i], c.gradTol, fmt.Sprintf("gradient of input %d", i))
			}
		})
	}
}

// TestFusedFloat32MatchesFloat64 runs each fused op in float32 and checks it
// against the same op in float64.
func TestFusedFloat32MatchesFloat64(t *testing.T) {
	for _, c := range allRefCases() {
		t.Run(c.name, func(t *testing.T) {
			want := runRef(t, c, tensor.Float64, c.fused)
			got := runRef(t, c, tensor.Float32, c.fused)
			requireClose(t, want.out, got.out, 1e-4, "value")
			for i := range want.grads {
				requireClose(t, want.grads[i], got.grads[i], 1e-4, fmt.Sprintf("gradient of input %d", i))
			}
		})
	}
}

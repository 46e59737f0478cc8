package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	kernels "github.com/d73a19ff/zoo/internal/gemm"
	"github.com/d73a19ff/zoo/internal/graphtest"
)

// rand32 is a float32 tensor of N(0, 1) values.
func rand32(seed uint64, shape ...int) *tensor.Dense {
	rng := rand.New(rand.NewPCG(seed, 11))
	v := make([]float32, tensor.Shape(shape).TotalSize())
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
}

// mat is a row-major float32 matrix, maybe transposed: at(i, p) is
// element (i, p) of op(X).
type mat struct {
	v  []float32
	ld int
	t  bool
}

func (x mat) at(i, p int) float64 {
	if x.t {
		return float64(kernels.RoundBF16(x.v[p*x.ld+i]))
	}
	return float64(kernels.RoundBF16(x.v[i*x.ld+p]))
}

// requireBF16Product checks got (m×n) against op(A)·op(B) computed in
// float64 on the operands rounded to bfloat16 (plus add, if not nil),
// within float32 summation error.
func requireBF16Product(t *testing.T, what string, got []float32, m, n, k int, a, b mat, add []float32) {
	t.Helper()
	require.Len(t, got, m*n, what)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, e float64
			for p := 0; p < k; p++ {
				x := a.at(i, p) * b.at(p, j)
				s += x
				e += math.Abs(x)
			}
			if add != nil {
				s += float64(add[j])
				e += math.Abs(float64(add[j]))
			}
			tol := float64(k+4)*0x1p-24*e + 1e-30
			if d := math.Abs(float64(got[i*n+j]) - s); !(d <= tol) {
				t.Fatalf("%s[%d][%d] = %.9g, want %.9g ± %.3g (the product of bf16-rounded operands)", what, i, j, got[i*n+j], s, tol)
			}
		}
	}
}

// TestLinearBF16 checks Linear under UseBF16 and its gradients: each is
// the float32 product of the bf16-rounded operands (the upstream gradient
// rounded too), with float32 sums. The switch reaches the forward product
// and both gradient products, and nothing else (the bias stays float32).
func TestLinearBF16(t *testing.T) {
	const rows, in, out = 39, 70, 45 // x (3, 13, 70)
	xv, wv, bv, rv := rand32(1, 3, 13, in), rand32(2, out, in), rand32(3, out), rand32(4, 3, 13, out)
	g := gorgonia.NewGraph()
	x, w, b := input(g, "x", xv), input(g, "w", wv), input(g, "b", bv)
	r := input(g, "r", rv)
	y, err := Linear(x, w, b)
	require.NoError(t, err)
	prod, err := gorgonia.HadamardProd(y, r)
	require.NoError(t, err)
	loss, err := gorgonia.Sum(prod) // dloss/dy = r
	require.NoError(t, err)
	grads, err := gorgonia.Grad(loss, x, w, b)
	require.NoError(t, err)
	require.Equal(t, 3, UseBF16(g), "Linear, LinearGradInput, LinearGradWeight")
	vs := graphtest.Run(t, g, y, grads[0], grads[1], grads[2])
	f := func(v gorgonia.Value) []float32 { return v.Data().([]float32) }
	X, W, R := f(xv), f(wv), f(rv)
	requireBF16Product(t, "y", f(vs[0]), rows, out, in, mat{v: X, ld: in}, mat{v: W, ld: in, t: true}, f(bv))
	requireBF16Product(t, "dx", f(vs[1]), rows, in, out, mat{v: R, ld: out}, mat{v: W, ld: in}, nil)
	requireBF16Product(t, "dW", f(vs[2]), out, in, rows, mat{v: R, ld: out, t: true}, mat{v: X, ld: in}, nil)
	// The bias gradient is the float32 sum of r over the rows.
	for o, got := range f(vs[3]) {
		var s float32
		for i := 0; i < rows; i++ {
			s += R[i*out+o]
		}
		require.InDelta(t, s, got, 1e-4)
	}
}

// TestBatchedMatMulBF16 is TestLinearBF16 for BatchedMatMul, every
// transpose, value and both gradients.
func TestBatchedMatMulBF16(t *testing.T) {
	const nb, m, k, p = 3, 9, 21, 11
	for _, tc := range []struct{ tA, tB bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		t.Run(tr2(tc.tA)+tr2(tc.tB), func(t *testing.T) {
			as, bs := []int{nb, m, k}, []int{nb, k, p}
			if tc.tA {
				as = []int{nb, k, m}
			}
			if tc.tB {
				bs = []int{nb, p, k}
			}
			av, bv, rv := rand32(5, as...), rand32(6, bs...), rand32(7, nb, m, p)
			g := gorgonia.NewGraph()
			a, b, r := input(g, "a", av), input(g, "b", bv), input(g, "r", rv)
			c, err := BatchedMatMul(a, b, tc.tA, tc.tB)
			require.NoError(t, err)
			prod, err := gorgonia.HadamardProd(c, r)
			require.NoError(t, err)
			loss, err := gorgonia.Sum(prod)
			require.NoError(t, err)
			grads, err := gorgonia.Grad(loss, a, b)
			require.NoError(t, err)
			require.Equal(t, 3, UseBF16(g))
			vs := graphtest.Run(t, g, c, grads[0], grads[1])
			A, B, R := av.Data().([]float32), bv.Data().([]float32), rv.Data().([]float32)
			C, dA, dB := vs[0].Data().([]float32), vs[1].Data().([]float32), vs[2].Data().([]float32)
			for z := 0; z < nb; z++ {
				az, bz, rz := A[z*m*k:][:m*k], B[z*k*p:][:k*p], R[z*m*p:][:m*p]
				opA := mat{v: az, ld: k, t: tc.tA}
				if tc.tA {
					opA.ld = m
				}
				opB := mat{v: bz, ld: p, t: tc.tB}
				if tc.tB {
					opB.ld = k
				}
				requireBF16Product(t, "C", C[z*m*p:][:m*p], m, p, k, opA, opB, nil)
				// dop(A) = R·op(B)ᵀ, dop(B) = op(A)ᵀ·R; the stored
				// gradients are their transposes when transposed.
				rm := mat{v: rz, ld: p}
				opBt, opAt := opB, opA
				opBt.t, opAt.t = !opB.t, !opA.t
				gA := dA[z*m*k:][:m*k]
				if tc.tA { // dA = (R·op(B)ᵀ)ᵀ = op(B)·Rᵀ, (k, m)
					requireBF16Product(t, "dA", gA, k, m, p, opB, mat{v: rz, ld: p, t: true}, nil)
				} else {
					requireBF16Product(t, "dA", gA, m, k, p, rm, opBt, nil)
				}
				gB := dB[z*k*p:][:k*p]
				if tc.tB { // dB = (op(A)ᵀ·R)ᵀ = Rᵀ·op(A), (p, k)
					requireBF16Product(t, "dB", gB, p, k, m, mat{v: rz, ld: p, t: true}, opA, nil)
				} else {
					requireBF16Product(t, "dB", gB, k, p, m, opAt, rm, nil)
				}
			}
		})
	}
}

func tr2(t bool) string {
	if t {
		return "T"
	}
	return "N"
}

// TestUseBF16Float32Elsewhere checks that the switch is the graph's: a
// second graph over the same values keeps float32 products.
func TestUseBF16Float32Elsewhere(t *testing.T) {
	xv, wv := rand32(8, 5, 64), rand32(9, 7, 64)
	run := func(bf16 bool) []float32 {
		g := gorgonia.NewGraph()
		y, err := Linear(input(g, "x", xv), input(g, "w", wv), nil)
		require.NoError(t, err)
		if bf16 {
			require.Equal(t, 1, UseBF16(g))
		}
		return graphtest.Run(t, g, y)[0].Data().([]float32)
	}
	f32a, bf, f32b := run(false), run(true), run(false)
	require.Equal(t, f32a, f32b)
	require.NotEqual(t, f32a, bf)
	X, W := xv.Data().([]float32), wv.Data().([]float32)
	requireBF16Product(t, "y", bf, 5, 7, 64, mat{v: X, ld: 64}, mat{v: W, ld: 64, t: true}, nil)
}

// TestAttentionBF16 checks the fused attention under UseBF16: its tile
// products run in bf16 (the output and the gradients differ from
// float32's) and the results stay within bfloat16's precision of
// float32's (a relative 2⁻⁸ per operand, summed).
func TestAttentionBF16(t *testing.T) {
	const n, tq, d = 4, 37, 16
	qv, kv, vv, rv := rand32(11, n, tq, d), rand32(12, n, tq, d), rand32(13, n, tq, d), rand32(14, n, tq, d)
	run := func(bf16 bool) [][]float32 {
		g := gorgonia.NewGraph()
		q, k, v, r := input(g, "q", qv), input(g, "k", kv), input(g, "v", vv), input(g, "r", rv)
		o, err := Attention(q, k, v, nil, 0.25, 0)
		require.NoError(t, err)
		prod, err := gorgonia.HadamardProd(o, r)
		require.NoError(t, err)
		loss, err := gorgonia.Sum(prod)
		require.NoError(t, err)
		grads, err := gorgonia.Grad(loss, q, k, v)
		require.NoError(t, err)
		if bf16 {
			require.Positive(t, UseBF16(g))
		}
		var out [][]float32
		for _, v := range graphtest.Run(t, g, append(gorgonia.Nodes{o}, grads...)...) {
			out = append(out, append([]float32(nil), v.Data().([]float32)...))
		}
		return out
	}
	f32, bf := run(false), run(true)
	for i, name := range []string{"output", "dq", "dk", "dv"} {
		var scale float64
		for _, x := range f32[i] {
			scale = max(scale, math.Abs(float64(x)))
		}
		require.NotEqual(t, f32[i], bf[i], "%s: bf16 products", name)
		for j := range f32[i] {
			require.InDelta(t, f32[i][j], bf[i][j], 0x1p-5*scale, "%s[%d]", name, j)
		}
	}
}

// UseBF16 switches a built (and differentiated) graph's products; a
// value that bfloat16 cannot hold shows the rounding.
func ExampleUseBF16() {
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(1, 2), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 2), tensor.WithBacking([]float32{1, 1 + 0x1p-10}))))
	w := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(1, 2), gorgonia.WithName("w"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 2), tensor.WithBacking([]float32{3, 4}))))
	y, err := Linear(x, w, nil) // x·wᵀ
	if err != nil {
		panic(err)
	}
	fmt.Println("switched:", UseBF16(g))
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		panic(err)
	}
	fmt.Println(y.Value().Data()) // 3·1 + 4·1, not 7.0039062
	// Output:
	// switched: 1
	// [7]
}

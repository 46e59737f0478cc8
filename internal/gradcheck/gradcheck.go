// Package gradcheck compares the gradients Gorgonia computes for a graph with
// central finite differences. It is a test helper for the ops and layers.
package gradcheck

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Build makes the graph under test in g and returns its output and the float64
// input nodes (with bound values) to differentiate with respect to.
type Build func(g *gorgonia.ExprGraph) (out *gorgonia.Node, wrt gorgonia.Nodes, err error)

// Options tune a check. Zero fields take the defaults in Check.
type Options struct {
	Step      float64 // finite-difference step, default 1e-6
	Atol      float64 // absolute tolerance, default 1e-6
	Rtol      float64 // relative tolerance, default 1e-5
	Seed      uint64  // seed of the random weights R, default 1
	BeforeRun func()  // called before every forward run, e.g. to replay dropout masks
}

// Result is the worst disagreement found.
type Result struct {
	Checked  int     // number of input elements perturbed
	MaxAbs   float64 // largest |analytic - numeric|
	Where    string  // the input and element of MaxAbs
	Analytic float64
	Numeric  float64
	Failed   bool // some element is outside tolerance
}

// Check differentiates L = Σ out ⊙ R (or out itself when it is a scalar),
// with R a fixed random tensor, and compares dL/dwrt against central
// differences of L. It returns an error when the graph cannot be built or run.
func Check(build Build, o Options) (Result, error) {
	if o.Step == 0 {
		o.Step = 1e-6
	}
	if o.Atol == 0 {
		o.Atol = 1e-6
	}
	if o.Rtol == 0 {
		o.Rtol = 1e-5
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	g := gorgonia.NewGraph()
	out, wrt, err := build(g)
	if err != nil {
		return Result{}, fmt.Errorf("gradcheck: build: %w", err)
	}
	loss, err := weightedSum(g, out, o.Seed)
	if err != nil {
		return Result{}, err
	}
	grads, err := gorgonia.Grad(loss, wrt...)
	if err != nil {
		return Result{}, fmt.Errorf("gradcheck: grad: %w", err)
	}
	var lossVal gorgonia.Value
	gradVals := make([]gorgonia.Value, len(grads))
	gorgonia.Read(loss, &lossVal)
	for i, gr := range grads {
		gorgonia.Read(gr, &gradVals[i])
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	run := func() (float64, error) {
		if o.BeforeRun != nil {
			o.BeforeRun()
		}
		lossVal = nil
		if err := m.RunAll(); err != nil {
			return 0, fmt.Errorf("gradcheck: run: %w", err)
		}
		m.Reset()
		return scalar(lossVal)
	}
	if _, err := run(); err != nil {
		return Result{}, err
	}
	analytic := make([][]float64, len(wrt))
	for i, v := range gradVals {
		a, err := float64s(v)
		if err != nil {
			return Result{}, fmt.Errorf("gradcheck: gradient of %s: %w", wrt[i].Name(), err)
		}
		analytic[i] = append([]float64(nil), a...)
	}
	var res Result
	for i, n := range wrt {
		x, err := float64s(n.Value())
		if err != nil {
			return Result{}, fmt.Errorf("gradcheck: input %s: %w", n.Name(), err)
		}
		if len(x) != len(analytic[i]) {
			return Result{}, fmt.Errorf("gradcheck: input %s has %d elements, its gradient %d", n.Name(), len(x), len(analytic[i]))
		}
		for j := range x {
			orig := x[j]
			x[j] = orig + o.Step
			lp, err := run()
			if err != nil {
				return Result{}, err
			}
			x[j] = orig - o.Step
			lm, err := run()
			if err != nil {
				return Result{}, err
			}
			x[j] = orig
			num := (lp - lm) / (2 * o.Step)
			diff := math.Abs(analytic[i][j] - num)
			res.Checked++
			if diff > o.Atol+o.Rtol*math.Abs(num) || math.IsNaN(diff) {
				res.Failed = true
			}
			if diff > res.MaxAbs || math.IsNaN(diff) {
				res.MaxAbs, res.Analytic, res.Numeric = diff, analytic[i][j], num
				res.Where = fmt.Sprintf("%s[%d]", n.Name(), j)
			}
		}
	}
	return res, nil
}

func (r Result) String() string {
	return fmt.Sprintf("checked %d elements; worst %s: analytic %.9g numeric %.9g (|diff| %.3g)", r.Checked, r.Where, r.Analytic, r.Numeric, r.MaxAbs)
}

// weightedSum returns Σ out ⊙ R for a fixed random R, or out if it is a scalar.
func weightedSum(g *gorgonia.ExprGraph, out *gorgonia.Node, seed uint64) (*gorgonia.Node, error) {
	if out.IsScalar() {
		return out, nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	r := make([]float64, out.Shape().TotalSize())
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	rt := tensor.New(tensor.WithShape(out.Shape().Clone()...), tensor.WithBacking(r))
	rn := gorgonia.NewTensor(g, tensor.Float64, out.Dims(), gorgonia.WithShape(out.Shape().Clone()...), gorgonia.WithValue(rt), gorgonia.WithName("gradcheck.R"))
	p, err := gorgonia.HadamardProd(out, rn)
	if err != nil {
		return nil, fmt.Errorf("gradcheck: weight output: %w", err)
	}
	s, err := gorgonia.Sum(p)
	if err != nil {
		return nil, fmt.Errorf("gradcheck: sum: %w", err)
	}
	return s, nil
}

func float64s(v gorgonia.Value) ([]float64, error) {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("want a dense float64 tensor, got %T", v)
	}
	s, ok := d.Data().([]float64)
	if !ok {
		return nil, fmt.Errorf("want float64 data, got %v", d.Dtype())
	}
	return s, nil
}

func scalar(v gorgonia.Value) (float64, error) {
	switch s := v.(type) {
	case *gorgonia.F64:
		return float64(*s), nil
	case *tensor.Dense:
		if f, ok := s.Data().(float64); ok {
			return f, nil
		}
		if f, ok := s.Data().([]float64); ok && len(f) == 1 {
			return f[0], nil
		}
	}
	return 0, fmt.Errorf("gradcheck: loss is %T, want a float64 scalar", v)
}

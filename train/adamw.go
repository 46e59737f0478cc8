package train

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/internal/parallel"
	"github.com/d73a19ff/zoo/layers"
)

// AdamWConfig holds AdamW's hyperparameters. The learning rate is not here:
// it is passed to every Step, so that a Schedule can drive it.
type AdamWConfig struct {
	Beta1       float64 `json:"beta1"`        // first-moment decay, in [0, 1)
	Beta2       float64 `json:"beta2"`        // second-moment decay, in [0, 1); nanoGPT uses 0.95
	Eps         float64 `json:"eps"`          // added to √v̂, > 0
	WeightDecay float64 `json:"weight_decay"` // decoupled decay of the decayed group, ≥ 0
	// Decay picks the parameters that get WeightDecay; the others get 0.
	// Nil means DecayMatrices.
	Decay DecayRule `json:"-"`
}

// DefaultAdamWConfig returns torch.optim.AdamW's defaults: betas (0.9,
// 0.999), eps 1e-8, weight decay 0.01, with the default DecayRule.
func DefaultAdamWConfig() AdamWConfig {
	return AdamWConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}
}

// Validate checks the ranges torch.optim.AdamW checks, except that eps must
// be positive (torch allows 0), and rejects NaN and infinities.
func (c AdamWConfig) Validate() error {
	for _, b := range []struct {
		name string
		v    float64
	}{{"beta1", c.Beta1}, {"beta2", c.Beta2}} {
		if !(b.v >= 0 && b.v < 1) {
			return fmt.Errorf("train: adamw %s %g must be in [0, 1)", b.name, b.v)
		}
	}
	// torch accepts eps = 0, but then a parameter whose gradients have all
	// been zero so far is updated by 0/0 and becomes NaN.
	if !(c.Eps > 0) || math.IsInf(c.Eps, 1) {
		return fmt.Errorf("train: adamw eps %g must be positive and finite", c.Eps)
	}
	if !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 1) {
		return fmt.Errorf("train: adamw weight decay %g must be finite and ≥ 0", c.WeightDecay)
	}
	return nil
}

// AdamW is torch.optim.AdamW (Loshchilov & Hutter, "Decoupled Weight Decay
// Regularization", ICLR 2019) over a fixed list of parameters, updated in
// place. Its state is the step count and, per parameter, the moment
// estimates m and v, of the parameter's dtype and keyed by its name.
type AdamW struct {
	cfg   AdamWConfig
	slots []*slot
	step  int
}

// slot is one parameter and its moments; exactly one dtype's pair is set.
type slot struct {
	p        *layers.Param
	decay    bool
	m32, v32 []float32
	m64, v64 []float64
}

// NewAdamW returns an optimizer for params, whose gradients Step expects in
// the same order (a training graph's Params(), or a Store's). Parameters
// must be float32 or float64 tensors with distinct names; cfg.Decay splits
// them into the groups Groups reports. The moments start at zero.
func NewAdamW(params []*layers.Param, cfg AdamWConfig) (*AdamW, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Decay == nil {
		cfg.Decay = DecayMatrices
	}
	o := &AdamW{cfg: cfg}
	seen := map[string]bool{}
	for i, p := range params {
		if p == nil || p.Value == nil {
			return nil, fmt.Errorf("train: adamw: parameter %d is nil", i)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("train: adamw: parameter %q is listed twice", p.Name)
		}
		seen[p.Name] = true
		f32, f64, err := floats(p.Value)
		if err != nil {
			return nil, fmt.Errorf("train: adamw: parameter %s %w", p.Name, err)
		}
		s := &slot{p: p, decay: cfg.Decay(p.Name, slices.Clone(p.Value.Shape()))}
		if f32 != nil {
			s.m32, s.v32 = make([]float32, len(f32)), make([]float32, len(f32))
		} else {
			s.m64, s.v64 = make([]float64, len(f64)), make([]float64, len(f64))
		}
		o.slots = append(o.slots, s)
	}
	return o, nil
}

// Config returns the hyperparameters, with the DecayRule in use.
func (o *AdamW) Config() AdamWConfig { return o.cfg }

// Steps is the number of steps taken (torch's state["step"]).
func (o *AdamW) Steps() int { return o.step }

// Group is a set of parameters sharing a weight decay, like one of torch's
// param_groups.
type Group struct {
	WeightDecay float64
	Params      []string // names, in the optimizer's order
}

// Groups reports which parameters are decayed: the decayed group (weight
// decay cfg.WeightDecay) first, then the undecayed one (0). Both are
// always present, possibly empty.
func (o *AdamW) Groups() []Group {
	g := []Group{{WeightDecay: o.cfg.WeightDecay}, {WeightDecay: 0}}
	for _, s := range o.slots {
		if s.decay {
			g[0].Params = append(g[0].Params, s.p.Name)
		} else {
			g[1].Params = append(g[1].Params, s.p.Name)
		}
	}
	return g
}

// NonFiniteError reports gradients holding NaN or ±Inf. Step and
// ClipGradNorm return it, by pointer, before changing anything, so the
// caller may skip the step (as a loss scaler does) or stop.
type NonFiniteError struct {
	Index []int    // positions in the gradient list
	Names []string // the parameters' names, when known (Step)
}

// Error names the parameters (or positions) with non-finite gradients.
func (e *NonFiniteError) Error() string {
	if len(e.Names) > 0 {
		return fmt.Sprintf("train: non-finite gradient (NaN or Inf) for %s", strings.Join(e.Names, ", "))
	}
	s := make([]string, len(e.Index))
	for i, n := range e.Index {
		s[i] = fmt.Sprint(n)
	}
	return fmt.Sprintf("train: non-finite gradient (NaN or Inf) at position %s", strings.Join(s, ", "))
}

// Step applies one AdamW update with learning rate lr to every parameter,
// grads[i] being the gradient of the i-th parameter given to NewAdamW, of
// its shape and dtype. As torch.optim.AdamW does, with t the new step
// count and λ the parameter's group weight decay:
//
//	p ← p·(1 − lr·λ)
//	m ← β1·m + (1 − β1)·g
//	v ← β2·v + (1 − β2)·g²
//	p ← p − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + eps)
//
// Float32 parameters are updated in float32 arithmetic, like torch's.
//
// A nil gradient skips its parameter, as torch.optim.AdamW skips one whose
// .grad is None (a parameter the step's graphs did not use): no decay, no
// moment update. The bias corrections use one step count for all
// parameters, where torch counts per parameter; the two agree for
// parameters that every step updates and for those no step does, the two
// kinds zoo's tasks have.
// Step checks everything first: a wrong gradient count, shape or dtype, a
// negative or non-finite lr is an error, and NaN or ±Inf in any gradient
// is a *NonFiniteError naming the parameters; in all these cases no
// parameter, moment or the step count changes.
func (o *AdamW) Step(grads []gorgonia.Value, lr float64) error {
	if !(lr >= 0) || math.IsInf(lr, 1) {
		return fmt.Errorf("train: adamw step: learning rate %g must be finite and ≥ 0", lr)
	}
	if len(grads) != len(o.slots) {
		return fmt.Errorf("train: adamw step: %d gradients for %d parameters", len(grads), len(o.slots))
	}
	work := make([]operands, len(grads))
	bad := &NonFiniteError{}
	for i, s := range o.slots {
		if grads[i] == nil {
			continue
		}
		var err error
		if work[i], err = s.operands(grads[i]); err != nil {
			return err
		}
		if !finite(work[i].g32) || !finite(work[i].g64) {
			bad.Index = append(bad.Index, i)
			bad.Names = append(bad.Names, s.p.Name)
		}
	}
	if len(bad.Index) > 0 {
		return bad
	}
	o.step++
	t := float64(o.step)
	bc1 := 1 - math.Pow(o.cfg.Beta1, t)
	bc2 := 1 - math.Pow(o.cfg.Beta2, t)
	// Parameters update independently, element by element, so spreading them
	// over the cores gives the same bits as one loop. A large parameter is
	// cut into pieces: a BERT word embedding is 70% of the model, and as one
	// piece it kept one core busy while the others had finished.
	type piece struct{ i, lo, hi int }
	var pieces []piece
	for i := range o.slots {
		if grads[i] == nil {
			continue
		}
		n := len(work[i].p32) + len(work[i].p64)
		for lo := 0; lo < n; lo += adamwPiece {
			pieces = append(pieces, piece{i, lo, min(lo+adamwPiece, n)})
		}
	}
	parallel.Run(len(pieces), func(k int) {
		p := pieces[k]
		o.update(o.slots[p.i], work[p.i], lr, bc1, bc2, p.lo, p.hi)
	})
	return nil
}

// adamwPiece is the most elements one goroutine updates at a time.
const adamwPiece = 1 << 16

// update applies the step to elements [lo, hi) of one parameter.
func (o *AdamW) update(s *slot, w operands, lr, bc1, bc2 float64, lo, hi int) {
	c := coeffs{
		decay: 1, beta1: o.cfg.Beta1, beta2: o.cfg.Beta2, eps: o.cfg.Eps,
		stepSize: lr / bc1, bc2Sqrt: math.Sqrt(bc2),
	}
	if s.decay {
		c.decay = 1 - lr*o.cfg.WeightDecay
	}
	if w.p32 != nil {
		update32(w.p32[lo:hi], w.g32[lo:hi], s.m32[lo:hi], s.v32[lo:hi], c)
	} else {
		update(w.p64[lo:hi], w.g64[lo:hi], s.m64[lo:hi], s.v64[lo:hi], c)
	}
}

// operands are one parameter's values and gradient, of one dtype.
type operands struct {
	p32, g32 []float32
	p64, g64 []float64
}

// operands checks gradient g against the slot's parameter and returns both.
func (s *slot) operands(g gorgonia.Value) (operands, error) {
	var w operands
	var err error
	w.p32, w.p64, err = floats(s.p.Value)
	if err != nil || (w.p32 == nil) != (s.m32 == nil) || len(w.p32)+len(w.p64) != len(s.m32)+len(s.m64) {
		return w, fmt.Errorf("train: adamw step: parameter %s was replaced by a tensor of another dtype or size", s.p.Name)
	}
	if w.g32, w.g64, err = floats(g); err != nil {
		return w, fmt.Errorf("train: adamw step: gradient of %s %w", s.p.Name, err)
	}
	if !slices.Equal(g.Shape(), s.p.Value.Shape()) {
		return w, fmt.Errorf("train: adamw step: gradient of %s has shape %v, the parameter %v", s.p.Name, g.Shape(), s.p.Value.Shape())
	}
	if (w.g32 == nil) != (w.p32 == nil) {
		return w, fmt.Errorf("train: adamw step: gradient of %s is %v, the parameter %v", s.p.Name, g.Dtype(), s.p.Value.Dtype())
	}
	return w, nil
}

// coeffs are one step's scalars, in float64 as torch computes them in
// Python before handing them to its kernels.
type coeffs struct {
	decay, beta1, beta2, eps, stepSize, bc2Sqrt float64
}

// update32 is update[float32] through the CPU's vector kernels
// (ops.AdamW32), bit for bit.
func update32(p, g, m, v []float32, c coeffs) {
	ops.AdamW32(p, g, m, v, float32(c.decay), float32(c.beta1), float32(1-c.beta1), float32(c.beta2),
		float32(1-c.beta2), float32(c.bc2Sqrt), float32(c.eps), float32(-c.stepSize))
}

// update is one AdamW step on one parameter, in the operation order of
// torch 1.13's _single_tensor_adamw (mul_, mul_/add_, mul_/addcmul_,
// sqrt/div/add_, addcdiv_), in T arithmetic. The conversions T(x*y) round
// every product, so that no architecture fuses a multiply-add (the Go
// spec allows it, and arm64 does) and results are the same everywhere.
func update[T float32 | float64](p, g, m, v []T, c coeffs) {
	decay, b1, b2 := T(c.decay), T(c.beta1), T(c.beta2)
	ob1, ob2 := T(1-c.beta1), T(1-c.beta2)
	eps, neg, bc2 := T(c.eps), T(-c.stepSize), T(c.bc2Sqrt)
	for i, gi := range g {
		m[i] = T(m[i]*b1) + T(ob1*gi)
		v[i] = T(v[i]*b2) + T(T(ob2*gi)*gi)
		denom := T(math.Sqrt(float64(v[i])))/bc2 + eps
		p[i] = T(p[i]*decay) + T(neg*(m[i]/denom))
	}
}

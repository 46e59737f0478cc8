package train

import (
	"fmt"
	"math"
)

// Schedule maps a step to a learning rate. step is the number of optimizer
// steps already taken: 0 for the first update, as nanoGPT's `it` and the
// step count of torch's LambdaLR (which calls the lambda before each
// update, scheduler.step() following optimizer.step()). Negative steps
// are treated as 0.
type Schedule interface {
	LR(step int) float64
}

// checkLR rejects a learning rate that is not positive and finite.
func checkLR(what string, lr float64) error {
	if !(lr > 0) || math.IsInf(lr, 1) {
		return fmt.Errorf("train: %s: learning rate %g must be positive and finite", what, lr)
	}
	return nil
}

// constant is Constant's schedule.
type constant float64

func (c constant) LR(int) float64 { return float64(c) }

// Constant returns lr at every step.
func Constant(lr float64) (Schedule, error) {
	if err := checkLR("constant schedule", lr); err != nil {
		return nil, err
	}
	return constant(lr), nil
}

// warmupCosine is WarmupCosine's schedule.
type warmupCosine struct {
	maxLR, minLR       float64
	warmup, decaySteps int
}

// WarmupCosine returns nanoGPT's get_lr: a linear warmup
// maxLR·(step+1)/(warmup+1) for step < warmup, then a cosine from maxLR at
// step = warmup down to minLR at step = decaySteps,
// minLR + ½(1 + cos(π·(step−warmup)/(decaySteps−warmup)))·(maxLR − minLR),
// and minLR after. It needs 0 ≤ minLR ≤ maxLR and 0 ≤ warmup < decaySteps.
func WarmupCosine(maxLR, minLR float64, warmup, decaySteps int) (Schedule, error) {
	if err := checkLR("warmup-cosine schedule", maxLR); err != nil {
		return nil, err
	}
	if !(minLR >= 0 && minLR <= maxLR) {
		return nil, fmt.Errorf("train: warmup-cosine schedule: min lr %g must be in [0, %g]", minLR, maxLR)
	}
	if warmup < 0 || decaySteps <= warmup {
		return nil, fmt.Errorf("train: warmup-cosine schedule: need 0 ≤ warmup (%d) < decay steps (%d)", warmup, decaySteps)
	}
	return warmupCosine{maxLR, minLR, warmup, decaySteps}, nil
}

func (s warmupCosine) LR(step int) float64 {
	step = max(step, 0)
	switch {
	case step < s.warmup:
		return s.maxLR * float64(step+1) / float64(s.warmup+1)
	case step > s.decaySteps:
		return s.minLR
	}
	ratio := float64(step-s.warmup) / float64(s.decaySteps-s.warmup)
	coeff := 0.5 * (1.0 + math.Cos(math.Pi*ratio))
	return s.minLR + coeff*(s.maxLR-s.minLR)
}

// warmupLinear is WarmupLinear's schedule.
type warmupLinear struct {
	lr            float64
	warmup, total int
}

// WarmupLinear returns Hugging Face's get_linear_schedule_with_warmup: lr ·
// step/warmup for step < warmup (0 at step 0), then lr·(total −
// step)/(total − warmup) down to 0 at step = total, and 0 after. It needs
// 0 ≤ warmup ≤ total and total > 0.
func WarmupLinear(lr float64, warmup, total int) (Schedule, error) {
	if err := checkLR("warmup-linear schedule", lr); err != nil {
		return nil, err
	}
	if warmup < 0 || total <= 0 || warmup > total {
		return nil, fmt.Errorf("train: warmup-linear schedule: need 0 ≤ warmup (%d) ≤ total (%d) and total > 0", warmup, total)
	}
	return warmupLinear{lr, warmup, total}, nil
}

func (s warmupLinear) LR(step int) float64 {
	step = max(step, 0)
	// Hugging Face's lambda, times the base lr as LambdaLR does.
	if step < s.warmup {
		return s.lr * (float64(step) / float64(max(1, s.warmup)))
	}
	return s.lr * max(0.0, float64(s.total-step)/float64(max(1, s.total-s.warmup)))
}

// noam is Noam's schedule.
type noam struct {
	dModel, factor float64
	warmup         float64
}

// Noam returns the inverse-square-root schedule of "Attention Is All You
// Need" (Vaswani et al. 2017, eq. 3), scaled by factor:
// factor · dModel^−0.5 · min(n^−0.5, n·warmup^−1.5) with n = step+1, the
// paper's 1-based step number, as in the Annotated Transformer's NoamOpt.
// It rises linearly to its peak factor·(dModel·warmup)^−0.5 at
// step = warmup−1 and decays as n^−0.5 after. It needs dModel, warmup > 0
// and a positive, finite factor.
func Noam(dModel, warmup int, factor float64) (Schedule, error) {
	if dModel <= 0 || warmup <= 0 {
		return nil, fmt.Errorf("train: noam schedule: d_model (%d) and warmup (%d) must be positive", dModel, warmup)
	}
	if !(factor > 0) || math.IsInf(factor, 1) {
		return nil, fmt.Errorf("train: noam schedule: factor %g must be positive and finite", factor)
	}
	return noam{float64(dModel), factor, float64(warmup)}, nil
}

func (s noam) LR(step int) float64 {
	n := float64(max(step, 0) + 1)
	return s.factor * (math.Pow(s.dModel, -0.5) * min(math.Pow(n, -0.5), n*math.Pow(s.warmup, -1.5)))
}

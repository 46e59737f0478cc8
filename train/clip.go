package train

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
)

// ClipGradNorm scales grads in place so that their global L2 norm (over
// all of them, as if concatenated) is at most maxNorm, and returns the norm
// before clipping, as torch.nn.utils.clip_grad_norm_ does: the scale is
// maxNorm / (norm + 1e-6), applied when it is below 1, that is when
// norm + 1e-6 > maxNorm (so a norm just under maxNorm is still scaled
// slightly, as in torch). Grads may mix float32 and float64; the norm is
// accumulated in float64 for both (torch accumulates float32 gradients in
// float32). maxNorm must be positive; +Inf only measures the norm.
//
// A NaN or ±Inf element is a *NonFiniteError listing the positions of the
// offending gradients, returned with the non-finite norm, and nothing is
// scaled (torch would scale everything by NaN). No gradients: norm 0.
// A nil gradient (a parameter the step did not use, torch's p.grad None)
// is left out, as clip_grad_norm_ leaves it out.
func ClipGradNorm(grads []gorgonia.Value, maxNorm float64) (float64, error) {
	if !(maxNorm > 0) {
		return 0, fmt.Errorf("train: clip grad norm: max norm %g must be positive", maxNorm)
	}
	f32 := make([][]float32, len(grads))
	f64 := make([][]float64, len(grads))
	var sum float64
	for i, g := range grads {
		if g == nil {
			continue
		}
		var err error
		if f32[i], f64[i], err = floats(g); err != nil {
			return 0, fmt.Errorf("train: clip grad norm: gradient %d %w", i, err)
		}
		sum += sumSquares(f32[i]) + sumSquares(f64[i])
	}
	norm := math.Sqrt(sum)
	if norm-norm != 0 {
		bad := &NonFiniteError{}
		for i := range grads {
			if !finite(f32[i]) || !finite(f64[i]) {
				bad.Index = append(bad.Index, i)
			}
		}
		if len(bad.Index) == 0 {
			return norm, fmt.Errorf("train: clip grad norm: the norm of finite gradients overflows float64")
		}
		return norm, bad
	}
	scale := maxNorm / (norm + 1e-6)
	if scale < 1 {
		for i := range grads {
			scaleBy(f32[i], float32(scale))
			scaleBy(f64[i], scale)
		}
	}
	return norm, nil
}

// sumSquares is Σ x², in float64.
func sumSquares[T float32 | float64](x []T) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return s
}

// scaleBy multiplies x by c in place.
func scaleBy[T float32 | float64](x []T, c T) {
	for i := range x {
		x[i] *= c
	}
}

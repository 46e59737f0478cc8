package llama

import (
	"fmt"
	"math"
)

// InvFreq returns the rotation's inverse frequencies for heads of width
// headDim (even, > 0): headDim/2 values, the i-th turning the pair (i,
// i+headDim/2) of rotate_half's halves by position·InvFreq[i]. They are
// what transformers' rope init functions (modeling_rope_utils.py)
// compute, in float64:
//
//   - default (_compute_default_rope_parameters):
//     inv_freq[i] = 1 / theta^(2i/headDim);
//   - llama3 (_compute_llama3_parameters, Llama 3.1's scaling): with
//     wavelen = 2π/inv_freq[i], low_freq_wavelen =
//     original_max_position_embeddings/low_freq_factor and
//     high_freq_wavelen = original_max_position_embeddings/high_freq_factor,
//     a frequency whose wavelength is below high_freq_wavelen is kept, one
//     above low_freq_wavelen is divided by factor, and one between is
//     interpolated: (1−s)·inv_freq/factor + s·inv_freq with
//     s = (original_max_position_embeddings/wavelen − low_freq_factor) /
//     (high_freq_factor − low_freq_factor).
//
// Both scale attention by 1 (transformers' attention_factor), so none is
// returned. r is a resolved setting (Config.Rope); another type is an
// error. Transformers computes the same in float32 for a float32 model:
// rounding its result to float32 may differ from that in the last bit.
func (r Rope) InvFreq(headDim int) ([]float64, error) {
	if headDim <= 0 || headDim%2 != 0 {
		return nil, fmt.Errorf("llama rope: head width %d must be even and positive", headDim)
	}
	if !(r.Theta > 1) || math.IsInf(r.Theta, 1) {
		return nil, fmt.Errorf("llama rope: rope_theta %g must be finite and more than 1", r.Theta)
	}
	inv := make([]float64, headDim/2)
	for i := range inv {
		inv[i] = 1 / math.Pow(r.Theta, float64(2*i)/float64(headDim))
	}
	switch r.Type {
	case "", RopeDefault:
		return inv, nil
	case RopeLlama3:
		if err := r.checkLlama3("llama rope", "the setting"); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("llama rope: rope_type %q is not implemented: zoo implements %q and %q", r.Type, RopeDefault, RopeLlama3)
	}
	old := float64(r.OriginalMaxPositionEmbeddings)
	lowWavelen, highWavelen := old/r.LowFreqFactor, old/r.HighFreqFactor
	for i, f := range inv {
		wavelen := 2 * math.Pi / f
		switch {
		case wavelen < highWavelen: // high frequencies: kept
		case wavelen > lowWavelen: // low frequencies: divided
			inv[i] = f / r.Factor
		default: // between: interpolated
			s := (old/wavelen - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
			inv[i] = (1-s)*f/r.Factor + s*f
		}
	}
	return inv, nil
}

package decode

import (
	"math"
)

// LogSumExp is log Σ exp(x), computed from the largest x so that it does
// not overflow; x − LogSumExp(x) is the log-softmax. Beam search takes one
// per live beam and step, over the whole vocabulary (8,000 to 50,000
// exponentials), so the sum is sumExp's, twice as fast as math.Exp's, or
// on AVX2 machines sumExpAVX2's, four terms at a time and six times
// faster than sumExp; with an x of +Inf or NaN, or all −Inf, it is
// math.Exp's (NaN).
func LogSumExp(x []float64) float64 {
	hi := math.Inf(-1)
	for _, v := range x {
		hi = max(hi, v)
	}
	if math.IsInf(hi, 0) || math.IsNaN(hi) {
		var sum float64
		for _, v := range x {
			sum += math.Exp(v - hi)
		}
		return hi + math.Log(sum)
	}
	return hi + math.Log(sumExpFast(x, hi))
}

// exp2Sixtyfourths are the bits of 2^(j/64) for j in [0, 64).
var exp2Sixtyfourths = func() (t [64]uint64) {
	for j := range t {
		t[j] = math.Float64bits(math.Exp2(float64(j) / 64))
	}
	return t
}()

// sumExp is Σ e^(v − hi) over x, for a finite hi ≥ every v, each term
// within a relative 3·2⁻⁵² of math.Exp's (and 0 below e^−708, where
// math.Exp's is subnormal or 0: next to the largest term, 1, nothing).
//
// Each d = v − hi is (64m + j)·ln 2/64 + r with |r| ≤ ln 2/128 (Tang's
// table-driven reduction, ACM TOMS 15(2), 1989, with ln 2 in two parts as
// in math.Exp), so e^d = 2^m · 2^(j/64) · e^r, and e^r is its Taylor
// series to r⁵ (the remainder is below 10⁻¹⁶ of it). Adding 1.5·2⁵²
// rounds d·64/ln 2 to an integer in the low bits, and adding m to the
// exponent bits of 2^(j/64) multiplies it by 2^m. Written out in the loop,
// which a call per term would slow by half.
func sumExp(x []float64, hi float64) float64 {
	const (
		shifter = 0x1.8p52
		ln2Hi   = 6.93147180369123816490e-01 / 64
		ln2Lo   = 1.90821492927058770002e-10 / 64
	)
	var sum float64
	for _, v := range x {
		d := v - hi
		if !(d >= -708) {
			continue
		}
		kf := d*(64/math.Ln2) + shifter
		k := int64(math.Float64bits(kf))
		kf -= shifter
		r := (d - kf*ln2Hi) - kf*ln2Lo
		r2 := r * r // Estrin's scheme: shorter chains than Horner's, 20% faster
		p := (1 + r) + r2*((1.0/2+r*(1.0/6))+r2*(1.0/24+r*(1.0/120)))
		sum += p * math.Float64frombits(exp2Sixtyfourths[k&63]+uint64(k>>6)<<52)
	}
	return sum
}

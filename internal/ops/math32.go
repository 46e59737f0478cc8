package ops

import "math"

// erf32 approximates erf for float32 work with the rational minimax form
// x·P(x²)/Q(x²) on x clamped to [−4, 4] (beyond which erf is ±1 in float32),
// the approximation Eigen and XLA use for single-precision erf. Its absolute
// error against math.Erf is below 5e-7 (TestErf32). It is several times faster
// than math.Erf, which dominates exact GELU in float32 otherwise.
func erf32(x float32) float32 {
	if x > 4 {
		x = 4
	} else if x < -4 {
		x = -4
	}
	x2 := x * x
	p := float32(-2.72614225801306e-10)
	p = p*x2 + 2.77068142495902e-08
	p = p*x2 - 2.10102402082508e-06
	p = p*x2 - 5.69250639462346e-05
	p = p*x2 - 7.34990630326855e-04
	p = p*x2 - 2.95459980854025e-03
	p = p*x2 - 1.60960333262415e-02
	q := float32(-1.45660718464996e-05)
	q = q*x2 - 2.13374055278905e-04
	q = q*x2 - 1.68282697438203e-03
	q = q*x2 - 7.37332916720468e-03
	q = q*x2 - 1.42647390514189e-02
	return x * p / q
}

// exp32 is e^x for float32 work, as Cephes' expf (S. L. Moshier): x =
// n·ln2 + r with |r| ≤ ln2/2, e^r from a degree-5 minimax polynomial, and
// 2ⁿ put in the exponent bits. Its relative error against math.Exp is below
// 3e-7 (TestExp32); it is 0 below −87.3 and +Inf above 88.376. The vector
// kernels (vec.go) evaluate the same steps with fused multiply-adds, so they
// differ from it by an ulp or so (TestVecExp); their erf and tanh match
// erf32 and tanh32 bit for bit.
func exp32(x float32) float32 {
	switch {
	case x > 88.3762626647949: // Cephes MAXLOGF: 2ⁿ would overflow the exponent bits
		return float32(math.Inf(1))
	case x < -87.33654475055310898657:
		return 0
	}
	fx := x*1.44269504088896341 + 0.5
	n := int32(fx)
	if float32(n) > fx { // floor
		n--
	}
	fn := float32(n)
	x -= fn * 0.693359375
	x -= fn * -2.12194440e-4
	z := x * x
	y := float32(1.9875691500e-4)
	y = y*x + 1.3981999507e-3
	y = y*x + 8.3334519073e-3
	y = y*x + 4.1665795894e-2
	y = y*x + 1.6666665459e-1
	y = y*x + 5.0000001201e-1
	y = y*z + x + 1
	return y * math.Float32frombits(uint32(n+127)<<23)
}

// expOf is e^x at the precision of T: exp32 for float32 work, math.Exp for
// float64, so float64 results stay exact.
func expOf[T Float](x float64) float64 {
	var z T
	if _, ok := any(z).(float32); ok {
		return float64(exp32(float32(x)))
	}
	return math.Exp(x)
}

// tanh32 approximates tanh for float32 work with the rational form
// x·P(x²)/Q(x²) on x clamped to ±7.9053 (beyond which tanh is ±1 in
// float32), the approximation Eigen uses for single precision. Its error
// against math.Tanh is below 5e-7, absolute and relative (TestTanh32).
func tanh32(x float32) float32 {
	if x > 7.90531110763549805 { // plain comparisons: the built-in float min and max also order NaNs and zeros, and cost more
		x = 7.90531110763549805
	} else if x < -7.90531110763549805 {
		x = -7.90531110763549805
	}
	x2 := x * x
	p := float32(-2.76076847742355e-16)
	p = p*x2 + 2.00018790482477e-13
	p = p*x2 - 8.60467152213735e-11
	p = p*x2 + 5.12229709037114e-08
	p = p*x2 + 1.48572235717979e-05
	p = p*x2 + 6.37261928875436e-04
	p = p*x2 + 4.89352455891786e-03
	q := float32(1.19825839466702e-06)
	q = q*x2 + 1.18534705686654e-04
	q = q*x2 + 2.26843463243900e-03
	q = q*x2 + 4.89352518554385e-03
	return x * p / q
}

// geluTanhForward32 is the tanh-approximated GELU over float32 with tanh32;
// with keep it stores each tanh for the gradient.
func geluTanhForward32(x, out, keep []float32) {
	for i, v := range x {
		th := tanh32(sqrt2OverPi * (v + geluCoef*v*v*v))
		if keep != nil {
			keep[i] = th
		}
		out[i] = 0.5 * v * (1 + th)
	}
}

// geluTanhGrad32 is its derivative times dy, from the kept tanh values when
// there are any.
func geluTanhGrad32(x, dy, out, kept []float32) {
	for i, v := range x {
		var th float32
		if kept != nil {
			th = kept[i]
		} else {
			th = tanh32(sqrt2OverPi * (v + geluCoef*v*v*v))
		}
		out[i] = dy[i] * (0.5*(1+th) + 0.5*v*(1-th*th)*sqrt2OverPi*(1+3*geluCoef*v*v))
	}
}

// geluForward32 is exact GELU over float32 with erf32; with keep it stores
// each Φ(x) for the gradient.
func geluForward32(x, out, keep []float32) {
	for i, v := range x {
		cdf := 0.5 * (1 + erf32(v*(1/sqrt2)))
		if keep != nil {
			keep[i] = cdf
		}
		out[i] = v * cdf
	}
}

// geluGrad32 is dy·(Φ(x) + x·φ(x)), from the kept Φ values when there are
// any.
func geluGrad32(x, dy, out, kept []float32) {
	for i, v := range x {
		var cdf float32
		if kept != nil {
			cdf = kept[i]
		} else {
			cdf = 0.5 * (1 + erf32(v*(1/sqrt2)))
		}
		pdf := invSqrt2Pi * exp32(-0.5*v*v)
		out[i] = dy[i] * (cdf + v*pdf)
	}
}

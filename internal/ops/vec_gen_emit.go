//go:build ignore

// The instruction emitters of vec_gen.go: registers, constants, the
// three-phase loop with its masked tail, and the vector exp, erf and tanh.
package main

import (
	"bytes"
	"fmt"
	"math"
)

type gen struct {
	bytes.Buffer
	zmm    bool
	isa    string            // "AVX2" or "AVX512"
	fp     map[string]string // parameter → its name+offset(FP)
	next   int               // next free vector register
	labels int
	used   map[string]bool // constants referenced
}

func (g *gen) op(format string, args ...any) { fmt.Fprintf(g, "\t"+format+"\n", args...) }
func (g *gen) label(l string)                { fmt.Fprintf(g, "%s:\n", l) }
func (g *gen) newLabel(s string) string      { g.labels++; return fmt.Sprintf("%s%d", s, g.labels) }
func (g *gen) lanes() int {
	if g.zmm {
		return 16
	}
	return 8
}

// v names vector register i at the ISA's width; x names its low 128 bits.
func (g *gen) v(i int) string {
	if g.zmm {
		return fmt.Sprintf("Z%d", i)
	}
	return fmt.Sprintf("Y%d", i)
}

func x(reg string) string { return "X" + reg[1:] }

// alloc takes the next free vector register. Y15 holds the AVX2 tail mask,
// and zmm kernels stay in Z0–Z14 too so that VEX forms can address them.
func (g *gen) alloc() string {
	if g.next >= 15 {
		panic("out of vector registers")
	}
	g.next++
	return g.v(g.next - 1)
}

func (g *gen) allocN(n int) []string {
	r := make([]string, n)
	for i := range r {
		r[i] = g.alloc()
	}
	return r
}

// bitwise returns the mnemonic of a bitwise op ("AND", "ANDN", "OR", "XOR"):
// the ps forms under AVX2, the AVX-512F dword forms for zmm (the ps ones need
// AVX512DQ).
func (g *gen) bitwise(o string) string {
	if g.zmm {
		return "VP" + o + "D"
	}
	return "V" + o + "PS"
}

// constants are splatted to 64 bytes; AVX2 code reads the first 32.
var constants = map[string]uint32{}

func f32(v float64) uint32 { return math.Float32bits(float32(v)) }

func init() {
	for name, v := range map[string]float64{
		"one": 1, "mone": -1, "half": 0.5, "mhalf": -0.5, "zero": 0,
		// exp32: Cephes expf.
		"exphi": 88.3762626647949, "explo": -87.33654475055310898657,
		"log2e": 1.44269504088896341, "ln2hi": 0.693359375, "ln2lo": -2.12194440e-4,
		"expp0": 1.9875691500e-4, "expp1": 1.3981999507e-3, "expp2": 8.3334519073e-3,
		"expp3": 4.1665795894e-2, "expp4": 1.6666665459e-1, "expp5": 5.0000001201e-1,
		// erf32.
		"erfhi": 4, "erflo": -4,
		"erfp0": -2.72614225801306e-10, "erfp1": 2.77068142495902e-08, "erfp2": -2.10102402082508e-06,
		"erfp3": -5.69250639462346e-05, "erfp4": -7.34990630326855e-04, "erfp5": -2.95459980854025e-03,
		"erfp6": -1.60960333262415e-02,
		"erfq0": -1.45660718464996e-05, "erfq1": -2.13374055278905e-04, "erfq2": -1.68282697438203e-03,
		"erfq3": -7.37332916720468e-03, "erfq4": -1.42647390514189e-02,
		// tanh32.
		"tanhhi": 7.90531110763549805, "tanhlo": -7.90531110763549805,
		"tanhp0": -2.76076847742355e-16, "tanhp1": 2.00018790482477e-13, "tanhp2": -8.60467152213735e-11,
		"tanhp3": 5.12229709037114e-08, "tanhp4": 1.48572235717979e-05, "tanhp5": 6.37261928875436e-04,
		"tanhp6": 4.89352455891786e-03,
		"tanhq0": 1.19825839466702e-06, "tanhq1": 1.18534705686654e-04, "tanhq2": 2.26843463243900e-03,
		"tanhq3": 4.89352518554385e-03,
		// GELU (activation.go).
		"invsqrt2": 1 / math.Sqrt2, "invsqrt2pi": 0.3989422804014327, "sqrt2overpi": 0.7978845608028654,
		"gelucoef": 0.044715, "gelucoef3": 3 * 0.044715,
	} {
		constants[name] = f32(v)
	}
	constants["inf"] = 0x7f800000
	constants["neginf"] = 0xff800000
	constants["i127"] = 127
}

// c names a constant vector as a memory operand.
func (g *gen) c(name string) string {
	if _, ok := constants[name]; !ok {
		panic("unknown constant " + name)
	}
	g.used[name] = true
	return "vc_" + name + "<>(SB)"
}

// slot is one unrolled vector of a loop body: its registers and whether it
// is the masked tail.
type slot struct {
	g    *gen
	u    int // position in the unrolled loop
	tail bool
	acc  []string // this slot's accumulators
	t    []string // this slot's temporaries
	neg  string   // −Inf register, for masking max reductions under AVX2
}

func (s *slot) mem(ptr string) string {
	return fmt.Sprintf("%d(%s)(AX*4)", s.u*s.g.lanes()*4, ptr)
}

func (s *slot) load(ptr, dst string) {
	switch {
	case !s.tail:
		s.g.op("VMOVUPS %s, %s", s.mem(ptr), dst)
	case s.g.zmm:
		s.g.op("VMOVUPS.Z %s, K1, %s", s.mem(ptr), dst)
	default:
		s.g.op("VMASKMOVPS %s, Y15, %s", s.mem(ptr), dst)
	}
}

func (s *slot) store(src, ptr string) {
	switch {
	case !s.tail:
		s.g.op("VMOVUPS %s, %s", src, s.mem(ptr))
	case s.g.zmm:
		s.g.op("VMOVUPS %s, K1, %s", src, s.mem(ptr))
	default:
		s.g.op("VMASKMOVPS %s, Y15, %s", src, s.mem(ptr))
	}
}

// add sets acc += v over the valid lanes; v may be clobbered.
func (s *slot) add(acc, v string) {
	switch {
	case !s.tail:
		s.g.op("VADDPS %s, %s, %s", v, acc, acc)
	case s.g.zmm:
		s.g.op("VADDPS %s, %s, K1, %s", v, acc, acc)
	default:
		s.g.op("VANDPS Y15, %s, %s", v, v)
		s.g.op("VADDPS %s, %s, %s", v, acc, acc)
	}
}

// fma sets acc += a·b over the valid lanes; a may be clobbered.
func (s *slot) fma(acc, a, b string) {
	switch {
	case !s.tail:
		s.g.op("VFMADD231PS %s, %s, %s", b, a, acc)
	case s.g.zmm:
		s.g.op("VFMADD231PS %s, %s, K1, %s", b, a, acc)
	default:
		s.g.op("VANDPS Y15, %s, %s", a, a)
		s.g.op("VFMADD231PS %s, %s, %s", b, a, acc)
	}
}

// max sets acc = max(acc, v) over the valid lanes; v may be clobbered.
func (s *slot) max(acc, v string) {
	switch {
	case !s.tail:
		s.g.op("VMAXPS %s, %s, %s", v, acc, acc)
	case s.g.zmm:
		s.g.op("VMAXPS %s, %s, K1, %s", v, acc, acc)
	default:
		s.g.op("VBLENDVPS Y15, %s, %s, %s", v, s.neg, v)
		s.g.op("VMAXPS %s, %s, %s", v, acc, acc)
	}
}

// loopSpec is one pass over the n elements (in CX) of the streams whose
// pointers the kernel has loaded; AX is the element index.
type loopSpec struct {
	unroll int
	accs   int    // accumulators per slot
	temps  int    // temporaries per slot
	neg    string // register holding −Inf: accumulators start there and combine by max; "" for sums
	body   func(s *slot)
}

// loop emits the pass and returns its accumulators, each reduced to lane 0.
func (g *gen) loop(l loopSpec) []string {
	lanes := g.lanes()
	accs := make([][]string, l.unroll)
	temps := make([][]string, l.unroll)
	for u := range accs {
		accs[u] = g.allocN(l.accs)
	}
	for u := range temps {
		temps[u] = g.allocN(l.temps)
	}
	for _, a := range accs {
		for _, r := range a {
			if l.neg != "" {
				g.op("VMOVAPS %s, %s", l.neg, r)
			} else {
				g.op("%s %s, %s, %s", g.bitwise("XOR"), r, r, r)
			}
		}
	}
	slotAt := func(u int, tail bool) *slot {
		return &slot{g: g, u: u, tail: tail, acc: accs[u], t: temps[u], neg: l.neg}
	}
	single, tail, done := g.newLabel("single"), g.newLabel("tail"), g.newLabel("done")
	g.op("XORQ AX, AX")
	if l.unroll > 1 {
		main := g.newLabel("main")
		g.op("MOVQ CX, BX")
		g.op("SUBQ $%d, BX", l.unroll*lanes)
		g.op("JLT %s", single)
		g.label(main)
		for u := 0; u < l.unroll; u++ {
			l.body(slotAt(u, false))
		}
		g.op("ADDQ $%d, AX", l.unroll*lanes)
		g.op("CMPQ AX, BX")
		g.op("JLE %s", main)
	}
	g.label(single)
	one := g.newLabel("one")
	g.op("MOVQ CX, BX")
	g.op("SUBQ $%d, BX", lanes)
	g.op("CMPQ AX, BX")
	g.op("JGT %s", tail)
	g.label(one)
	l.body(slotAt(0, false))
	g.op("ADDQ $%d, AX", lanes)
	g.op("CMPQ AX, BX")
	g.op("JLE %s", one)
	g.label(tail)
	g.op("CMPQ AX, CX")
	g.op("JEQ %s", done)
	g.op("MOVQ CX, BX")
	g.op("SUBQ AX, BX") // 1 ≤ BX < lanes elements left
	if g.zmm {
		g.op("LEAQ vtailk<>(SB), R11")
		g.op("KMOVW (R11)(BX*2), K1")
	} else {
		g.op("SHLQ $2, BX")
		g.op("LEAQ vtailmask<>+32(SB), R11")
		g.op("SUBQ BX, R11")
		g.op("VMOVDQU (R11), Y15")
	}
	l.body(slotAt(0, true))
	g.label(done)
	combine := "VADDPS"
	if l.neg != "" {
		combine = "VMAXPS"
	}
	for k := 0; k < l.accs; k++ {
		for u := 1; u < l.unroll; u++ {
			g.op("%s %s, %s, %s", combine, accs[u][k], accs[0][k], accs[0][k])
		}
		g.hreduce(combine, accs[0][k], temps[0][0])
	}
	return accs[0]
}

// hreduce folds the lanes of r into its lane 0 with combine, using tmp.
func (g *gen) hreduce(combine, r, tmp string) {
	y := "Y" + r[1:]
	if g.zmm {
		g.op("VEXTRACTF64X4 $1, %s, %s", r, "Y"+tmp[1:])
		g.op("%s %s, %s, %s", combine, "Y"+tmp[1:], y, y)
	}
	g.op("VEXTRACTF128 $1, %s, %s", y, x(tmp))
	g.op("%s %s, %s, %s", combine, x(tmp), x(r), x(r))
	g.op("VPERMILPS $0x4e, %s, %s", x(r), x(tmp))
	g.op("%s %s, %s, %s", combine, x(tmp), x(r), x(r))
	g.op("VPERMILPS $0xb1, %s, %s", x(r), x(tmp))
	g.op("%s %s, %s, %s", combine, x(tmp), x(r), x(r))
}

// clamp sets dst = min(max(a, lo), hi) with a NaN a staying NaN (the
// register operand of VMINPS/VMAXPS is the one returned on NaN).
func (g *gen) clamp(dst, a, tmp, lo, hi string) {
	g.op("VMOVUPS %s, %s", g.c(hi), tmp)
	g.op("VMINPS %s, %s, %s", a, tmp, tmp)
	g.op("VMOVUPS %s, %s", g.c(lo), dst)
	g.op("VMAXPS %s, %s, %s", tmp, dst, dst)
}

// exp sets y = e^x as exp32 (Cephes expf, S. L. Moshier): x = n·ln2 + r with
// n = ⌊x·log2e + ½⌋, e^r from the degree-5 polynomial, 2ⁿ built in the
// exponent bits. Below −87.34 the result is 0, above 88.38 +Inf; NaN stays
// NaN. x, t1 and t2 are clobbered; y must differ from them.
func (g *gen) exp(y, xr, t1, t2 string) {
	g.clamp(t1, xr, t2, "explo", "exphi")
	g.op("VMULPS %s, %s, %s", g.c("log2e"), t1, y)
	g.op("VADDPS %s, %s, %s", g.c("half"), y, y)
	if g.zmm {
		g.op("VRNDSCALEPS $1, %s, %s", y, y) // floor
	} else {
		g.op("VROUNDPS $1, %s, %s", y, y)
	}
	g.op("VFNMADD231PS %s, %s, %s", g.c("ln2hi"), y, t1) // r = x − n·ln2, in two parts
	g.op("VFNMADD231PS %s, %s, %s", g.c("ln2lo"), y, t1)
	g.op("VCVTPS2DQ %s, %s", y, y) // 2ⁿ: n+127 in the exponent bits
	g.op("VPADDD %s, %s, %s", g.c("i127"), y, y)
	g.op("VPSLLD $23, %s, %s", y, y)
	// Out of range: 2ⁿ becomes +Inf (x > hi) or 0 (x < lo). 2ⁿ has no
	// mantissa bits, so OR-ing in the Inf exponent gives exactly +Inf.
	if g.zmm {
		g.op("VCMPPS $0x1e, %s, %s, K2", g.c("exphi"), xr) // GT_OQ
		g.op("VPORD %s, %s, K2, %s", g.c("inf"), y, y)
		g.op("VCMPPS $0x11, %s, %s, K2", g.c("explo"), xr) // LT_OQ
		g.op("VPXORD %s, %s, K2, %s", y, y, y)
	} else {
		g.op("VCMPPS $0x1e, %s, %s, %s", g.c("exphi"), xr, t2)
		g.op("VANDPS %s, %s, %s", g.c("inf"), t2, t2)
		g.op("VORPS %s, %s, %s", t2, y, y)
		g.op("VCMPPS $0x11, %s, %s, %s", g.c("explo"), xr, xr)
		g.op("VANDNPS %s, %s, %s", y, xr, y)
	}
	g.op("VMULPS %s, %s, %s", t1, t1, t2) // r²
	g.op("VMOVUPS %s, %s", g.c("expp0"), xr)
	for i := 1; i <= 5; i++ {
		g.op("VFMADD213PS %s, %s, %s", g.c(fmt.Sprintf("expp%d", i)), t1, xr)
	}
	g.op("VFMADD213PS %s, %s, %s", t1, t2, xr) // p·r² + r
	g.op("VADDPS %s, %s, %s", g.c("one"), xr, xr)
	g.op("VMULPS %s, %s, %s", xr, y, y)
}

// rational sets q = a·P(a²)/Q(a²) on a clamped to ±hi: the form erf32 and
// tanh32 use (coefficients pre{p,q}0…, highest degree first). a, t1 and t2
// are clobbered. Horner's steps multiply and add separately, as the scalar
// functions do, so the results are theirs bit for bit: in particular both
// reach exactly ±1 at the clamp, which fused steps miss by an ulp or two
// (and GELU's gradient term 1 − tanh² would then amplify).
func (g *gen) rational(q, a, t1, t2, pre string, np, nq int) {
	g.clamp(t2, a, t1, pre+"lo", pre+"hi")
	g.op("VMULPS %s, %s, %s", t2, t2, t1)
	horner := func(dst, c string, n int) {
		g.op("VMOVUPS %s, %s", g.c(pre+c+"0"), dst)
		for i := 1; i < n; i++ {
			g.op("VMULPS %s, %s, %s", t1, dst, dst)
			g.op("VADDPS %s, %s, %s", g.c(fmt.Sprintf("%s%s%d", pre, c, i)), dst, dst)
		}
	}
	horner(a, "p", np)
	horner(q, "q", nq)
	g.op("VMULPS %s, %s, %s", t2, a, a)
	g.op("VDIVPS %s, %s, %s", q, a, q)
}

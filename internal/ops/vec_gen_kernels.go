//go:build ignore

// The kernels vec_gen.go writes. Each emit function loads its float32
// parameters, runs one or more loops, and returns; pointer parameters are in
// SI, DI, DX, R8, R9 in order and n is in CX (see kernel in vec_gen.go).
// vec.go documents each kernel's semantics beside its Go fallback.
package main

var kernels = []*kernel{
	{name: "sum", params: "x *float32, n int", result: 1, doc: "Σ x[i].",
		emit: func(g *gen, k *kernel, _ map[string]bool) {
			s := g.loop(loopSpec{unroll: 4, accs: 1, temps: 1, body: func(s *slot) {
				s.load(k.ptr("x"), s.t[0])
				s.add(s.acc[0], s.t[0])
			}})
			g.ret(k, s[0])
		}},
	{name: "max", params: "x *float32, n int", result: 1, doc: "max x[i], −Inf for n = 0.",
		emit: func(g *gen, k *kernel, _ map[string]bool) {
			neg := g.alloc()
			g.op("VMOVUPS %s, %s", g.c("neginf"), neg)
			m := g.loop(loopSpec{unroll: 4, accs: 1, temps: 1, neg: neg, body: func(s *slot) {
				s.load(k.ptr("x"), s.t[0])
				s.max(s.acc[0], s.t[0])
			}})
			g.ret(k, m[0])
		}},
	{name: "dot", params: "x, y *float32, n int", result: 1, doc: "Σ x[i]·y[i].",
		emit: func(g *gen, k *kernel, _ map[string]bool) {
			d := g.loop(loopSpec{unroll: 4, accs: 1, temps: 2, body: func(s *slot) {
				s.load(k.ptr("x"), s.t[0])
				s.load(k.ptr("y"), s.t[1])
				s.fma(s.acc[0], s.t[0], s.t[1])
			}})
			g.ret(k, d[0])
		}},
	{name: "meanVar", params: "x *float32, n int", result: 2,
		doc: "The mean and biased variance of x by the corrected two-pass algorithm\n(Chan, Golub & LeVeque 1983): m = Σx/n, then d = x − m,\nmean = m + Σd/n, variance = Σd²/n − (Σd/n)²; n > 0.",
		emit: func(g *gen, k *kernel, _ map[string]bool) {
			m, nf := g.alloc(), g.alloc()
			g.op("VCVTSI2SSQ CX, %s, %s", x(nf), x(nf))
			sum := g.loop(loopSpec{unroll: 4, accs: 1, temps: 1, body: func(s *slot) {
				s.load(k.ptr("x"), s.t[0])
				s.add(s.acc[0], s.t[0])
			}})
			g.op("VDIVSS %s, %s, %s", x(nf), x(sum[0]), x(sum[0]))
			g.op("VBROADCASTSS %s, %s", x(sum[0]), m)
			g.next = 2
			d := g.loop(loopSpec{unroll: 4, accs: 2, temps: 1, body: func(s *slot) {
				s.load(k.ptr("x"), s.t[0])
				g.op("VSUBPS %s, %s, %s", m, s.t[0], s.t[0])
				s.fma(s.acc[1], s.t[0], s.t[0])
				s.add(s.acc[0], s.t[0])
			}})
			g.op("VDIVSS %s, %s, %s", x(nf), x(d[1]), x(d[1]))         // Σd²/n
			g.op("VDIVSS %s, %s, %s", x(nf), x(d[0]), x(d[0]))         // Σd/n
			g.op("VFNMADD231SS %s, %s, %s", x(d[0]), x(d[0]), x(d[1])) // Σd²/n − (Σd/n)²
			g.op("VADDSS %s, %s, %s", x(d[0]), x(m), x(m))
			g.ret(k, m, d[1])
		}},
	{name: "lnAffine", params: "x, gamma, b, y *float32, n int, mean, rstd float32", opt: []string{"b"},
		doc: "y = (x − mean)·rstd·gamma + b, with b optional.",
		emit: func(g *gen, k *kernel, has map[string]bool) {
			c := g.broadcast("mean", "rstd")
			g.loop(loopSpec{unroll: 4, temps: 3, body: func(s *slot) {
				t := s.t
				s.load(k.ptr("x"), t[0])
				g.op("VSUBPS %s, %s, %s", c[0], t[0], t[0])
				g.op("VMULPS %s, %s, %s", c[1], t[0], t[0])
				s.load(k.ptr("gamma"), t[1])
				if has["b"] {
					s.load(k.ptr("b"), t[2])
					g.op("VFMADD213PS %s, %s, %s", t[2], t[1], t[0])
				} else {
					g.op("VMULPS %s, %s, %s", t[1], t[0], t[0])
				}
				s.store(t[0], k.ptr("y"))
			}})
			g.ret(k)
		}},
	{name: "lnGradSums", params: "x, gamma, dy *float32, n int, mean float32", result: 2,
		doc: "Σ dy·gamma and Σ dy·gamma·(x − mean).",
		emit: func(g *gen, k *kernel, _ map[string]bool) {
			c := g.broadcast("mean")
			a := g.loop(loopSpec{unroll: 3, accs: 2, temps: 2, body: func(s *slot) {
				t := s.t
				s.load(k.ptr("dy"), t[0])
				s.load(k.ptr("gamma"), t[1])
				g.op("VMULPS %s, %s, %s", t[1], t[0], t[0])
				s.load(k.ptr("x"), t[1])
				g.op("VSUBPS %s, %s, %s", c[0], t[1], t[1])
				s.fma(s.acc[1], t[1], t[0])
				s.add(s.acc[0], t[0])
			}})
			g.ret(k, a[0], a[1])
		}},
	{name: "lnGradApply", params: "x, gamma, dy, out *float32, n int, mean, c1, c2, c3 float32",
		doc: "out = c1·(dy·gamma − c3 − (x − mean)·c2).",
		emit: func(g *gen, k *kernel, _ map[string]bool) {
			c := g.broadcast("mean", "c1", "c2", "c3")
			g.loop(loopSpec{unroll: 4, temps: 2, body: func(s *slot) {
				t := s.t
				s.load(k.ptr("dy"), t[0])
				s.load(k.ptr("gamma"), t[1])
				g.op("VMULPS %s, %s, %s", t[1], t[0], t[0])
				g.op("VSUBPS %s, %s, %s", c[3], t[0], t[0])
				s.load(k.ptr("x"), t[1])
				g.op("VSUBPS %s, %s, %s", c[0], t[1], t[1])
				g.op("VFNMADD231PS %s, %s, %s", c[2], t[1], t[0])
				g.op("VMULPS %s, %s, %s", c[1], t[0], t[0])
				s.store(t[0], k.ptr("out"))
			}})
			g.ret(k)
		}},
	{name: "lnGammaAcc", params: "x, dy, out *float32, n int, mean, rstd float32",
		doc: "out += dy·(x − mean)·rstd.",
		emit: func(g *gen, k *kernel, _ map[string]bool) {
			c := g.broadcast("mean", "rstd")
			g.loop(loopSpec{unroll: 4, temps: 3, body: func(s *slot) {
				t := s.t
				s.load(k.ptr("x"), t[0])
				g.op("VSUBPS %s, %s, %s", c[0], t[0], t[0])
				g.op("VMULPS %s, %s, %s", c[1], t[0], t[0])
				s.load(k.ptr("dy"), t[1])
				s.load(k.ptr("out"), t[2])
				g.op("VFMADD231PS %s, %s, %s", t[1], t[0], t[2])
				s.store(t[2], k.ptr("out"))
			}})
			g.ret(k)
		}},
	{name: "maxScaled", params: "x, m *float32, n int, scale float32", opt: []string{"m"}, result: 1,
		doc: "max of x[i]·scale over the i with m[i] ≠ 0 (every i without m), −Inf if none.",
		emit: func(g *gen, k *kernel, has map[string]bool) {
			c := g.broadcast("scale")
			neg := g.alloc()
			g.op("VMOVUPS %s, %s", g.c("neginf"), neg)
			r := g.loop(loopSpec{unroll: 4, accs: 1, temps: 2, neg: neg, body: func(s *slot) {
				t := s.t
				s.load(k.ptr("x"), t[0])
				g.op("VMULPS %s, %s, %s", c[0], t[0], t[0])
				if !has["m"] {
					s.max(s.acc[0], t[0])
					return
				}
				s.load(k.ptr("m"), t[1])
				if g.zmm {
					if s.tail {
						g.op("VCMPPS $4, %s, %s, K1, K2", g.c("zero"), t[1]) // NEQ_UQ
					} else {
						g.op("VCMPPS $4, %s, %s, K2", g.c("zero"), t[1])
					}
					g.op("VMAXPS %s, %s, K2, %s", t[0], s.acc[0], s.acc[0])
					return
				}
				g.op("VCMPPS $4, %s, %s, %s", g.c("zero"), t[1], t[1])
				g.op("VBLENDVPS %s, %s, %s, %s", t[1], t[0], neg, t[0])
				s.max(s.acc[0], t[0])
			}})
			g.ret(k, r[0])
		}},
	{name: "expShift", params: "x, m, out *float32, n int, scale, shift float32", opt: []string{"m", "out"}, result: 1,
		doc: "e = exp32(x·scale − shift) where m ≠ 0 (everywhere without m), else 0;\nstores e in out when out is not nil and returns Σ e.",
		emit: func(g *gen, k *kernel, has map[string]bool) {
			c := g.broadcast("scale", "shift")
			r := g.loop(loopSpec{unroll: 2, accs: 1, temps: 4, body: func(s *slot) {
				t := s.t
				s.load(k.ptr("x"), t[0])
				g.op("VFMSUB213PS %s, %s, %s", c[1], c[0], t[0])
				g.exp(t[1], t[0], t[2], t[3])
				if has["m"] {
					s.load(k.ptr("m"), t[0])
					if g.zmm {
						g.op("VCMPPS $4, %s, %s, K2", g.c("zero"), t[0])
						g.op("VMOVAPS.Z %s, K2, %s", t[1], t[1])
					} else {
						g.op("VCMPPS $4, %s, %s, %s", g.c("zero"), t[0], t[0])
						g.op("VANDPS %s, %s, %s", t[0], t[1], t[1])
					}
				}
				if has["out"] {
					s.store(t[1], k.ptr("out"))
				}
				s.add(s.acc[0], t[1])
			}})
			g.ret(k, r[0])
		}},
	{name: "affine", params: "x, out *float32, n int, a, b float32", doc: "out = x·a + b.",
		emit: func(g *gen, k *kernel, _ map[string]bool) {
			c := g.broadcast("a", "b")
			g.loop(loopSpec{unroll: 4, temps: 1, body: func(s *slot) {
				s.load(k.ptr("x"), s.t[0])
				g.op("VFMADD213PS %s, %s, %s", c[1], c[0], s.t[0])
				s.store(s.t[0], k.ptr("out"))
			}})
			g.ret(k)
		}},
	{name: "axpy", params: "x, y *float32, n int, a float32", doc: "y += a·x.",
		emit: func(g *gen, k *kernel, _ map[string]bool) {
			c := g.broadcast("a")
			g.loop(loopSpec{unroll: 4, temps: 2, body: func(s *slot) {
				s.load(k.ptr("x"), s.t[0])
				s.load(k.ptr("y"), s.t[1])
				g.op("VFMADD231PS %s, %s, %s", c[0], s.t[0], s.t[1])
				s.store(s.t[1], k.ptr("y"))
			}})
			g.ret(k)
		}},
	{name: "adamw", params: "p, grad, m, v *float32, n int, decay, b1, ob1, b2, ob2, bc2, eps, neg float32",
		doc: "One AdamW step in adamwGo's order, each product and quotient rounded (no FMA):\nm = m·b1 + ob1·grad, v = v·b2 + (ob2·grad)·grad, p = p·decay + neg·(m/(√v/bc2 + eps)).",
		emit: func(g *gen, k *kernel, _ map[string]bool) {
			c := g.broadcast("decay", "b1", "ob1", "b2", "ob2", "bc2", "eps", "neg")
			decay, b1, ob1, b2, ob2, bc2, eps, neg := c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
			g.loop(loopSpec{unroll: 1, temps: 4, body: func(s *slot) {
				t := s.t
				s.load(k.ptr("grad"), t[0])
				s.load(k.ptr("m"), t[1])
				g.op("VMULPS %s, %s, %s", b1, t[1], t[1])
				g.op("VMULPS %s, %s, %s", ob1, t[0], t[2])
				g.op("VADDPS %s, %s, %s", t[2], t[1], t[1])
				s.store(t[1], k.ptr("m"))
				s.load(k.ptr("v"), t[2])
				g.op("VMULPS %s, %s, %s", b2, t[2], t[2])
				g.op("VMULPS %s, %s, %s", ob2, t[0], t[3])
				g.op("VMULPS %s, %s, %s", t[0], t[3], t[3])
				g.op("VADDPS %s, %s, %s", t[3], t[2], t[2])
				s.store(t[2], k.ptr("v"))
				g.op("VSQRTPS %s, %s", t[2], t[2])
				g.op("VDIVPS %s, %s, %s", bc2, t[2], t[2])
				g.op("VADDPS %s, %s, %s", eps, t[2], t[2])
				g.op("VDIVPS %s, %s, %s", t[2], t[1], t[1])
				g.op("VMULPS %s, %s, %s", neg, t[1], t[1])
				s.load(k.ptr("p"), t[3])
				g.op("VMULPS %s, %s, %s", decay, t[3], t[3])
				g.op("VADDPS %s, %s, %s", t[1], t[3], t[3])
				s.store(t[3], k.ptr("p"))
			}})
			g.ret(k)
		}},
	{name: "softmaxGrad", params: "p, dy, out *float32, n int, scale, dot float32", doc: "out = scale·p·(dy − dot).",
		emit: func(g *gen, k *kernel, _ map[string]bool) {
			c := g.broadcast("scale", "dot")
			g.loop(loopSpec{unroll: 4, temps: 2, body: func(s *slot) {
				t := s.t
				s.load(k.ptr("dy"), t[0])
				g.op("VSUBPS %s, %s, %s", c[1], t[0], t[0])
				s.load(k.ptr("p"), t[1])
				g.op("VMULPS %s, %s, %s", t[1], t[0], t[0])
				g.op("VMULPS %s, %s, %s", c[0], t[0], t[0])
				s.store(t[0], k.ptr("out"))
			}})
			g.ret(k)
		}},
	{name: "swiglu", params: "gate, up, out, keep *float32, n int", opt: []string{"keep"},
		doc: "out = gate·σ(gate)·up with σ(x) = 1/(1 + exp32(−x)), stored in keep if not nil\n(without keep out = gate/(1 + exp32(−gate))·up, swigluGo's order).",
		emit: func(g *gen, k *kernel, has map[string]bool) {
			g.loop(loopSpec{unroll: 2, temps: 5, body: func(s *slot) {
				t := s.t
				s.load(k.ptr("gate"), t[0])
				g.op("VMULPS %s, %s, %s", g.c("mone"), t[0], t[1]) // −x
				g.exp(t[2], t[1], t[3], t[4])
				g.op("VADDPS %s, %s, %s", g.c("one"), t[2], t[2]) // 1 + e^−x
				if has["keep"] {
					g.op("VMOVUPS %s, %s", g.c("one"), t[1])
					g.op("VDIVPS %s, %s, %s", t[2], t[1], t[1]) // σ
					s.store(t[1], k.ptr("keep"))
					g.op("VMULPS %s, %s, %s", t[1], t[0], t[0])
				} else {
					g.op("VDIVPS %s, %s, %s", t[2], t[0], t[0])
				}
				s.load(k.ptr("up"), t[3])
				g.op("VMULPS %s, %s, %s", t[3], t[0], t[0])
				s.store(t[0], k.ptr("out"))
			}})
			g.ret(k)
		}},
	{name: "gelu", params: "x, out, keep *float32, n int", opt: []string{"keep"},
		doc: "out = x·Φ(x) with Φ(x) = ½(1 + erf32(x/√2)), stored in keep if not nil.",
		emit: func(g *gen, k *kernel, has map[string]bool) {
			g.loop(loopSpec{unroll: 2, temps: 5, body: func(s *slot) {
				t := s.t
				s.load(k.ptr("x"), t[0])
				cdf(g, t[4], t[0], t[1], t[2], t[3])
				if has["keep"] {
					s.store(t[4], k.ptr("keep"))
				}
				g.op("VMULPS %s, %s, %s", t[4], t[0], t[0])
				s.store(t[0], k.ptr("out"))
			}})
			g.ret(k)
		}},
	{name: "geluGrad", params: "x, dy, out, kept *float32, n int", opt: []string{"kept"},
		doc: "out = dy·(Φ(x) + x·φ(x)), with Φ read from kept if not nil.",
		emit: func(g *gen, k *kernel, has map[string]bool) {
			g.loop(loopSpec{unroll: 2, temps: 6, body: func(s *slot) {
				t := s.t
				s.load(k.ptr("x"), t[0])
				if has["kept"] {
					s.load(k.ptr("kept"), t[1])
				} else {
					cdf(g, t[1], t[0], t[2], t[3], t[4])
				}
				g.op("VMULPS %s, %s, %s", g.c("mhalf"), t[0], t[2]) // −½x²
				g.op("VMULPS %s, %s, %s", t[0], t[2], t[2])
				g.exp(t[3], t[2], t[4], t[5])
				g.op("VMULPS %s, %s, %s", g.c("invsqrt2pi"), t[3], t[3]) // φ(x)
				g.op("VFMADD213PS %s, %s, %s", t[1], t[0], t[3])
				s.load(k.ptr("dy"), t[2])
				g.op("VMULPS %s, %s, %s", t[2], t[3], t[3])
				s.store(t[3], k.ptr("out"))
			}})
			g.ret(k)
		}},
	{name: "geluTanh", params: "x, out, keep *float32, n int", opt: []string{"keep"},
		doc: "out = ½x(1 + t), t = tanh32(√(2/π)(x + 0.044715x³)), stored in keep if not nil.",
		emit: func(g *gen, k *kernel, has map[string]bool) {
			g.loop(loopSpec{unroll: 2, temps: 5, body: func(s *slot) {
				t := s.t
				s.load(k.ptr("x"), t[0])
				tanhArg(g, t[4], t[0], t[1], t[2], t[3])
				if has["keep"] {
					s.store(t[4], k.ptr("keep"))
				}
				g.op("VADDPS %s, %s, %s", g.c("one"), t[4], t[4])
				g.op("VMULPS %s, %s, %s", g.c("half"), t[0], t[1])
				g.op("VMULPS %s, %s, %s", t[4], t[1], t[1])
				s.store(t[1], k.ptr("out"))
			}})
			g.ret(k)
		}},
	{name: "geluTanhGrad", params: "x, dy, out, kept *float32, n int", opt: []string{"kept"},
		doc: "out = dy·(½(1+t) + ½x(1−t²)·√(2/π)(1 + 3·0.044715x²)), with t read from kept if not nil.",
		emit: func(g *gen, k *kernel, has map[string]bool) {
			g.loop(loopSpec{unroll: 2, temps: 5, body: func(s *slot) {
				t := s.t
				s.load(k.ptr("x"), t[0])
				if has["kept"] {
					s.load(k.ptr("kept"), t[1])
				} else {
					tanhArg(g, t[1], t[0], t[2], t[3], t[4])
				}
				g.op("VMOVUPS %s, %s", g.c("one"), t[2]) // 1 − t²
				g.op("VFNMADD231PS %s, %s, %s", t[1], t[1], t[2])
				g.op("VMULPS %s, %s, %s", g.c("gelucoef3"), t[0], t[3]) // 1 + 3c·x²
				g.op("VMULPS %s, %s, %s", t[0], t[3], t[3])
				g.op("VADDPS %s, %s, %s", g.c("one"), t[3], t[3])
				g.op("VMULPS %s, %s, %s", g.c("half"), t[0], t[4]) // ½x(1−t²)·√(2/π)·…
				g.op("VMULPS %s, %s, %s", t[2], t[4], t[4])
				g.op("VMULPS %s, %s, %s", g.c("sqrt2overpi"), t[4], t[4])
				g.op("VMULPS %s, %s, %s", t[3], t[4], t[4])
				g.op("VADDPS %s, %s, %s", g.c("one"), t[1], t[1]) // + ½(1+t)
				g.op("VMULPS %s, %s, %s", g.c("half"), t[1], t[1])
				g.op("VADDPS %s, %s, %s", t[4], t[1], t[1])
				s.load(k.ptr("dy"), t[2])
				g.op("VMULPS %s, %s, %s", t[2], t[1], t[1])
				s.store(t[1], k.ptr("out"))
			}})
			g.ret(k)
		}},
}

// cdf sets q = Φ(xr) = ½(1 + erf32(xr/√2)), keeping xr; a, t1, t2 are
// clobbered.
func cdf(g *gen, q, xr, a, t1, t2 string) {
	g.op("VMULPS %s, %s, %s", g.c("invsqrt2"), xr, a)
	g.rational(q, a, t1, t2, "erf", 7, 5)
	g.op("VADDPS %s, %s, %s", g.c("one"), q, q)
	g.op("VMULPS %s, %s, %s", g.c("half"), q, q)
}

// tanhArg sets q = tanh32(√(2/π)(xr + 0.044715·xr³)), in geluTanhForward32's
// order of operations, keeping xr; a, t1, t2 are clobbered.
func tanhArg(g *gen, q, xr, a, t1, t2 string) {
	g.op("VMULPS %s, %s, %s", g.c("gelucoef"), xr, a)
	g.op("VMULPS %s, %s, %s", xr, a, a)
	g.op("VMULPS %s, %s, %s", xr, a, a)
	g.op("VADDPS %s, %s, %s", xr, a, a)
	g.op("VMULPS %s, %s, %s", g.c("sqrt2overpi"), a, a)
	g.rational(q, a, t1, t2, "tanh", 7, 4)
}

//go:build ignore

// gen_kernels writes kernel_amd64.s, the register-blocked micro-kernels.
// Run it with `go generate` (see kernel_amd64.go).
//
// Every kernel has the Go signature
//
//	func(k int, a, b, c *float32, ldc int, alpha, beta float32)
//
// and computes the mr×nr tile C = alpha·A·B + beta·C, where A is a packed micro-panel
// (k steps of mr floats), B a packed micro-panel (k steps of nr floats), C is
// row-major with row stride ldc, and beta == 0 means C is not read.
// The accumulators hold rows of C: nr/vec vector registers per row, and one
// broadcast element of A multiplies each row's B vectors per step.
package main

import (
	"bytes"
	"fmt"
	"os"
)

// spec describes one kernel.
type spec struct {
	name   string
	zmm    bool // AVX-512 (32 zmm registers) or AVX2 (16 ymm registers)
	mr, nv int  // rows, vectors per row (nr = nv·lanes)
	unroll int  // k steps per loop iteration
}

var specs = []spec{
	{name: "kernelAVX512", zmm: true, mr: 12, nv: 2, unroll: 4},
	{name: "kernelAVX2", zmm: false, mr: 6, nv: 2, unroll: 4},
}

type gen struct{ bytes.Buffer }

func (g *gen) op(format string, args ...any) { fmt.Fprintf(g, "\t"+format+"\n", args...) }

func (s spec) reg(i int) string {
	if s.zmm {
		return fmt.Sprintf("Z%d", i)
	}
	return fmt.Sprintf("Y%d", i)
}

func (s spec) lanes() int {
	if s.zmm {
		return 16
	}
	return 8
}

func (g *gen) kernel(s spec) {
	vb := 4 * s.lanes() // bytes per vector
	nacc := s.mr * s.nv
	bReg := nacc        // first of nv registers holding B
	aReg := nacc + s.nv // broadcast registers (two, alternating)
	betaReg := bReg     // reused after the loop
	acc := func(r, v int) string { return s.reg(r*s.nv + v) }

	fmt.Fprintf(g, "// func %s(k int, a, b, c *float32, ldc int, alpha, beta float32)\n", s.name)
	fmt.Fprintf(g, "// %d×%d tile, %d k steps per iteration.\n", s.mr, s.nv*s.lanes(), s.unroll)
	fmt.Fprintf(g, "TEXT ·%s(SB), NOSPLIT, $0-48\n", s.name)
	g.op("MOVQ k+0(FP), CX")
	g.op("MOVQ a+8(FP), SI")
	g.op("MOVQ b+16(FP), DI")
	g.op("MOVQ c+24(FP), DX")
	g.op("MOVQ ldc+32(FP), R8")
	g.op("SHLQ $2, R8")
	// Prefetch the C tile while the products are being accumulated.
	g.op("MOVQ DX, R9")
	for r := 0; r < s.mr; r++ { // every line of a row, aligned or not
		for off := 0; off < s.nv*vb; off += 64 {
			g.op("PREFETCHT0 %d(R9)", off)
		}
		g.op("PREFETCHT0 %d(R9)", s.nv*vb-4)
		if r < s.mr-1 {
			g.op("ADDQ R8, R9")
		}
	}
	for i := 0; i < nacc; i++ {
		g.op("VXORPS %s, %s, %s", s.reg(i), s.reg(i), s.reg(i))
	}
	step := func(u int) {
		for v := 0; v < s.nv; v++ {
			g.op("VMOVUPS %d(DI), %s", (u*s.nv+v)*vb, s.reg(bReg+v))
		}
		for r := 0; r < s.mr; r++ {
			a := s.reg(aReg + r%2)
			g.op("VBROADCASTSS %d(SI), %s", (u*s.mr+r)*4, a)
			for v := 0; v < s.nv; v++ {
				g.op("VFMADD231PS %s, %s, %s", s.reg(bReg+v), a, acc(r, v))
			}
		}
	}
	g.op("MOVQ CX, BX")
	g.op("SHRQ $%d, BX", log2(s.unroll))
	g.op("JZ tail_%s", s.name)
	fmt.Fprintf(g, "loop_%s:\n", s.name)
	for u := 0; u < s.unroll; u++ {
		step(u)
	}
	g.op("ADDQ $%d, SI", s.unroll*s.mr*4)
	g.op("ADDQ $%d, DI", s.unroll*s.nv*vb)
	g.op("DECQ BX")
	g.op("JNZ loop_%s", s.name)
	fmt.Fprintf(g, "tail_%s:\n", s.name)
	g.op("ANDQ $%d, CX", s.unroll-1)
	g.op("JZ store_%s", s.name)
	fmt.Fprintf(g, "tailloop_%s:\n", s.name)
	step(0)
	g.op("ADDQ $%d, SI", s.mr*4)
	g.op("ADDQ $%d, DI", s.nv*vb)
	g.op("DECQ CX")
	g.op("JNZ tailloop_%s", s.name)

	fmt.Fprintf(g, "store_%s:\n", s.name)
	g.op("MOVL alpha+40(FP), AX")
	g.op("CMPL AX, $0x3f800000") // alpha == 1: nothing to scale
	g.op("JEQ beta_%s", s.name)
	g.op("VBROADCASTSS alpha+40(FP), %s", s.reg(betaReg))
	for i := 0; i < nacc; i++ {
		g.op("VMULPS %s, %s, %s", s.reg(betaReg), s.reg(i), s.reg(i))
	}
	fmt.Fprintf(g, "beta_%s:\n", s.name)
	g.op("MOVL beta+44(FP), AX")
	g.op("SHLL $1, AX") // drop the sign: ±0 both mean "do not read C"
	g.op("JZ overwrite_%s", s.name)
	g.op("VBROADCASTSS beta+44(FP), %s", s.reg(betaReg))
	for r := 0; r < s.mr; r++ {
		for v := 0; v < s.nv; v++ {
			g.op("VFMADD231PS %d(DX), %s, %s", v*vb, s.reg(betaReg), acc(r, v))
			g.op("VMOVUPS %s, %d(DX)", acc(r, v), v*vb)
		}
		if r < s.mr-1 {
			g.op("ADDQ R8, DX")
		}
	}
	g.op("VZEROUPPER")
	g.op("RET")
	fmt.Fprintf(g, "overwrite_%s:\n", s.name)
	for r := 0; r < s.mr; r++ {
		for v := 0; v < s.nv; v++ {
			g.op("VMOVUPS %s, %d(DX)", acc(r, v), v*vb)
		}
		if r < s.mr-1 {
			g.op("ADDQ R8, DX")
		}
	}
	g.op("VZEROUPPER")
	g.op("RET\n")
}

// transposeWidths are the panel widths that get an AVX-512 transpose: the
// kernels' mr and nr.
var transposeWidths = []int{6, 12, 16, 32}

// transpose writes
//
//	func transpose<w>(dst, src *float32, ld, kb int)
//
// which packs w full rows of src (row stride ld) into a micro-panel:
// dst[p*w+r] = src[r*ld+p] for p < kb, r < w; kb must be a multiple of 16.
// Each 16×16 block is transposed in registers in four shuffle stages
// (unpack ps, unpack pd, two 128-bit lane shuffles); rows past w in the last
// group of 16 are zero and masked off when stored.
func (g *gen) transpose(w int) {
	name := fmt.Sprintf("transpose%d", w)
	fmt.Fprintf(g, "// func %s(dst, src *float32, ld, kb int)\n", name)
	fmt.Fprintf(g, "TEXT ·%s(SB), NOSPLIT, $0-32\n", name)
	g.op("MOVQ dst+0(FP), DI")
	g.op("MOVQ src+8(FP), SI")
	g.op("MOVQ ld+16(FP), R8")
	g.op("SHLQ $2, R8")
	g.op("LEAQ (R8)(R8*2), R9") // 3 rows
	g.op("MOVQ R8, R12")
	g.op("SHLQ $4, R12") // 16 rows
	g.op("MOVQ kb+24(FP), CX")
	g.op("SHRQ $4, CX")
	g.op("JZ done_%s", name)
	if rem := w % 16; rem != 0 {
		g.op("MOVL $%d, AX", 1<<rem-1)
		g.op("KMOVW AX, K1")
	}
	fmt.Fprintf(g, "loop_%s:\n", name)
	g.op("MOVQ SI, R10")
	for grp := 0; grp*16 < w; grp++ {
		rows := min(16, w-grp*16)
		if grp > 0 {
			g.op("ADDQ R12, R10")
		}
		// Row r is at R10 + (r/4)·4 rows + (r%4) rows.
		g.op("MOVQ R10, R11")
		for r := 0; r < 16; r++ {
			if r%4 == 0 && r > 0 {
				g.op("LEAQ (R11)(R8*4), R11")
			}
			if r >= rows {
				g.op("VPXORD Z%d, Z%d, Z%d", r, r, r)
				continue
			}
			addr := [4]string{"(R11)", "(R11)(R8*1)", "(R11)(R8*2)", "(R11)(R9*1)"}[r%4]
			g.op("VMOVUPS %s, Z%d", addr, r)
		}
		for j := 0; j < 8; j++ { // t(2j), t(2j+1) from rows 2j, 2j+1
			g.op("VUNPCKLPS Z%d, Z%d, Z%d", 2*j+1, 2*j, 16+2*j)
			g.op("VUNPCKHPS Z%d, Z%d, Z%d", 2*j+1, 2*j, 16+2*j+1)
		}
		for q := 0; q < 4; q++ { // s(4q+e): rows 4q..4q+3 at element e of each lane
			t := 16 + 4*q
			g.op("VUNPCKLPD Z%d, Z%d, Z%d", t+2, t, 4*q)
			g.op("VUNPCKHPD Z%d, Z%d, Z%d", t+2, t, 4*q+1)
			g.op("VUNPCKLPD Z%d, Z%d, Z%d", t+3, t+1, 4*q+2)
			g.op("VUNPCKHPD Z%d, Z%d, Z%d", t+3, t+1, 4*q+3)
		}
		for e := 0; e < 4; e++ { // u: groups 0,1; v: groups 2,3
			g.op("VSHUFF32X4 $0x88, Z%d, Z%d, Z%d", 4+e, e, 16+e)
			g.op("VSHUFF32X4 $0xdd, Z%d, Z%d, Z%d", 4+e, e, 20+e)
			g.op("VSHUFF32X4 $0x88, Z%d, Z%d, Z%d", 12+e, 8+e, 24+e)
			g.op("VSHUFF32X4 $0xdd, Z%d, Z%d, Z%d", 12+e, 8+e, 28+e)
		}
		for e := 0; e < 4; e++ { // out(4L+e) = lane L of s(e), s(4+e), s(8+e), s(12+e)
			g.op("VSHUFF32X4 $0x88, Z%d, Z%d, Z%d", 24+e, 16+e, e)
			g.op("VSHUFF32X4 $0xdd, Z%d, Z%d, Z%d", 24+e, 16+e, 8+e)
			g.op("VSHUFF32X4 $0x88, Z%d, Z%d, Z%d", 28+e, 20+e, 4+e)
			g.op("VSHUFF32X4 $0xdd, Z%d, Z%d, Z%d", 28+e, 20+e, 12+e)
		}
		for p := 0; p < 16; p++ {
			off := p*w*4 + grp*64
			if rows < 16 {
				g.op("VMOVUPS Z%d, K1, %d(DI)", p, off)
			} else {
				g.op("VMOVUPS Z%d, %d(DI)", p, off)
			}
		}
	}
	g.op("ADDQ $64, SI")
	g.op("ADDQ $%d, DI", 16*w*4)
	g.op("DECQ CX")
	g.op("JNZ loop_%s", name)
	fmt.Fprintf(g, "done_%s:\n", name)
	g.op("VZEROUPPER")
	g.op("RET\n")
}

func log2(n int) int {
	l := 0
	for 1<<l < n {
		l++
	}
	if 1<<l != n {
		panic("unroll must be a power of two")
	}
	return l
}

func main() {
	var g gen
	g.WriteString("// Code generated by gen_kernels.go; DO NOT EDIT.\n\n")
	g.WriteString("//go:build amd64 && !purego\n\n#include \"textflag.h\"\n\n")
	for _, s := range specs {
		if s.mr*s.nv+s.nv+2 > map[bool]int{true: 32, false: 16}[s.zmm] {
			panic(s.name + ": too many registers")
		}
		g.kernel(s)
	}
	for _, w := range transposeWidths {
		g.transpose(w)
	}
	if err := os.WriteFile("kernel_amd64.s", g.Bytes(), 0o644); err != nil {
		panic(err)
	}
}

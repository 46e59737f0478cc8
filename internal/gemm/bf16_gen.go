//go:build ignore

// bf16_gen writes bf16_amd64.s: the AVX-512 BF16 micro-kernel and the
// routines that round float32 operands to bfloat16 pairs. Run it with
// `go generate` (see bf16_amd64.go).
//
// Go's assembler (Go 1.26) does not know VDPBF16PS, VCVTNE2PS2BF16 or
// VCVTNEPS2BF16, so they are written as their EVEX bytes (evex below, for
// the register forms only), each with the instruction in a comment. The
// encodings were checked against llvm-mc (-mattr=+avx512bf16), and
// TestBF16AsmMatchesGo checks what they compute against the Go code.
package main

import (
	"bytes"
	"fmt"
	"os"
)

type gen struct{ bytes.Buffer }

func (g *gen) op(format string, args ...any) { fmt.Fprintf(g, "\t"+format+"\n", args...) }

// evex emits a 512-bit EVEX instruction of map 0F38, W0, with register
// operands in Intel order: dst (ModRM.reg), src1 (EVEX.vvvv) and src2
// (ModRM.rm). pp is the implied prefix (1: 66, 2: F3, 3: F2).
func (g *gen) evex(comment string, opcode byte, pp byte, dst, src1, src2 int) {
	p0 := byte(0x02) // mm = 0F38
	if dst&8 == 0 {
		p0 |= 0x80 // R̄
	}
	if src2&16 == 0 {
		p0 |= 0x40 // X̄ (extends rm to 32 registers)
	}
	if src2&8 == 0 {
		p0 |= 0x20 // B̄
	}
	if dst&16 == 0 {
		p0 |= 0x10 // R̄′
	}
	p1 := 0x04 | pp | byte(^src1&15)<<3 // W0, vvvv inverted
	p2 := byte(0x40)                    // L′L = 512 bits, no masking
	if src1&16 == 0 {
		p2 |= 0x08 // V̄′
	}
	modrm := 0xc0 | byte(dst&7)<<3 | byte(src2&7)
	g.op("BYTE $0x62; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x%02x; BYTE $0x%02x // %s",
		p0, p1, p2, opcode, modrm, comment)
}

// dpbf16ps emits acc += pairs of src1 · pairs of src2 (VDPBF16PS).
func (g *gen) dpbf16ps(acc, src1, src2 int) {
	g.evex(fmt.Sprintf("VDPBF16PS Z%d, Z%d, Z%d", src2, src1, acc), 0x52, 2, acc, src1, src2)
}

// cvtne2ps2bf16 emits dst = bf16(lo) in the low 16 words, bf16(hi) in the
// high 16 (VCVTNE2PS2BF16 dst, hi, lo).
func (g *gen) cvtne2ps2bf16(dst, hi, lo int) {
	g.evex(fmt.Sprintf("VCVTNE2PS2BF16 Z%d, Z%d, Z%d", lo, hi, dst), 0x72, 3, dst, hi, lo)
}

// cvtneps2bf16 emits Ydst = bf16(Zsrc) (VCVTNEPS2BF16).
func (g *gen) cvtneps2bf16(dst, src int) {
	g.evex(fmt.Sprintf("VCVTNEPS2BF16 Z%d, Y%d", src, dst), 0x72, 2, dst, 0, src)
}

const (
	mr, nv, unroll = 12, 2, 4 // a 12×32 tile, as the float32 AVX-512 kernel
	name           = "kernelBF16AVX512"
)

// kernel writes
//
//	func kernelBF16AVX512(k int, a, b, c *float32, ldc int, alpha, beta float32)
//
// which is kernelAVX512 over k steps of bfloat16 pairs: a step of A is 12
// dwords (rows' pairs of consecutive k), a step of B 32 dwords (columns'
// pairs); each accumulator lane adds both products of its pair.
func (g *gen) kernel() {
	nacc := mr * nv
	bReg, aReg := nacc, nacc+nv
	acc := func(r, v int) int { return r*nv + v }
	fmt.Fprintf(g, "// func %s(k int, a, b, c *float32, ldc int, alpha, beta float32)\n", name)
	fmt.Fprintf(g, "// %d×%d tile, %d steps of pairs per iteration.\n", mr, nv*16, unroll)
	fmt.Fprintf(g, "TEXT ·%s(SB), NOSPLIT, $0-48\n", name)
	g.op("MOVQ k+0(FP), CX")
	g.op("MOVQ a+8(FP), SI")
	g.op("MOVQ b+16(FP), DI")
	g.op("MOVQ c+24(FP), DX")
	g.op("MOVQ ldc+32(FP), R8")
	g.op("SHLQ $2, R8")
	g.op("MOVQ DX, R9")
	for r := 0; r < mr; r++ {
		g.op("PREFETCHT0 0(R9)")
		g.op("PREFETCHT0 64(R9)")
		g.op("PREFETCHT0 124(R9)")
		if r < mr-1 {
			g.op("ADDQ R8, R9")
		}
	}
	for i := 0; i < nacc; i++ {
		g.op("VXORPS Z%d, Z%d, Z%d", i, i, i)
	}
	step := func(u int) {
		for v := 0; v < nv; v++ {
			g.op("VMOVUPS %d(DI), Z%d", (u*nv+v)*64, bReg+v)
		}
		for r := 0; r < mr; r++ {
			a := aReg + r%2
			g.op("VBROADCASTSS %d(SI), Z%d", (u*mr+r)*4, a)
			for v := 0; v < nv; v++ {
				g.dpbf16ps(acc(r, v), bReg+v, a)
			}
		}
	}
	g.op("MOVQ CX, BX")
	g.op("SHRQ $2, BX")
	g.op("JZ tail_%s", name)
	fmt.Fprintf(g, "loop_%s:\n", name)
	for u := 0; u < unroll; u++ {
		step(u)
	}
	g.op("ADDQ $%d, SI", unroll*mr*4)
	g.op("ADDQ $%d, DI", unroll*nv*64)
	g.op("DECQ BX")
	g.op("JNZ loop_%s", name)
	fmt.Fprintf(g, "tail_%s:\n", name)
	g.op("ANDQ $%d, CX", unroll-1)
	g.op("JZ store_%s", name)
	fmt.Fprintf(g, "tailloop_%s:\n", name)
	step(0)
	g.op("ADDQ $%d, SI", mr*4)
	g.op("ADDQ $%d, DI", nv*64)
	g.op("DECQ CX")
	g.op("JNZ tailloop_%s", name)

	fmt.Fprintf(g, "store_%s:\n", name)
	g.op("MOVL alpha+40(FP), AX")
	g.op("CMPL AX, $0x3f800000")
	g.op("JEQ beta_%s", name)
	g.op("VBROADCASTSS alpha+40(FP), Z%d", bReg)
	for i := 0; i < nacc; i++ {
		g.op("VMULPS Z%d, Z%d, Z%d", bReg, i, i)
	}
	fmt.Fprintf(g, "beta_%s:\n", name)
	g.op("MOVL beta+44(FP), AX")
	g.op("SHLL $1, AX")
	g.op("JZ overwrite_%s", name)
	g.op("VBROADCASTSS beta+44(FP), Z%d", bReg)
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			g.op("VFMADD231PS %d(DX), Z%d, Z%d", v*64, bReg, acc(r, v))
			g.op("VMOVUPS Z%d, %d(DX)", acc(r, v), v*64)
		}
		if r < mr-1 {
			g.op("ADDQ R8, DX")
		}
	}
	g.op("VZEROUPPER")
	g.op("RET")
	fmt.Fprintf(g, "overwrite_%s:\n", name)
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			g.op("VMOVUPS Z%d, %d(DX)", acc(r, v), v*64)
		}
		if r < mr-1 {
			g.op("ADDQ R8, DX")
		}
	}
	g.op("VZEROUPPER")
	g.op("RET\n")
}

// roundRow writes
//
//	func roundRowBF16(dst *uint32, src *float32, n int)
//
// which rounds n floats (n a multiple of 32) to bfloat16, in order: dword
// j of dst holds src[2j] (low half) and src[2j+1] (high half).
func (g *gen) roundRow() {
	g.WriteString("// func roundRowBF16(dst *uint32, src *float32, n int)\n")
	g.WriteString("TEXT ·roundRowBF16(SB), NOSPLIT, $0-24\n")
	g.op("MOVQ dst+0(FP), DI")
	g.op("MOVQ src+8(FP), SI")
	g.op("MOVQ n+16(FP), CX")
	g.op("SHRQ $5, CX")
	g.op("JZ done_roundRowBF16")
	g.WriteString("loop_roundRowBF16:\n")
	g.op("VMOVUPS 0(SI), Z0")
	g.op("VMOVUPS 64(SI), Z1")
	g.cvtne2ps2bf16(2, 1, 0)
	g.op("VMOVDQU32 Z2, 0(DI)")
	g.op("ADDQ $128, SI")
	g.op("ADDQ $64, DI")
	g.op("DECQ CX")
	g.op("JNZ loop_roundRowBF16")
	g.WriteString("done_roundRowBF16:\n")
	g.op("VZEROUPPER")
	g.op("RET\n")
}

// pairRows writes
//
//	func pairRowsBF16(dst *uint32, r0, r1 *float32, n int)
//
// which rounds two rows of n floats (n a multiple of 16) to bfloat16 and
// interleaves them: dword j of dst holds r0[j] (low half) and r1[j] (high
// half).
func (g *gen) pairRows() {
	g.WriteString("// func pairRowsBF16(dst *uint32, r0, r1 *float32, n int)\n")
	g.WriteString("TEXT ·pairRowsBF16(SB), NOSPLIT, $0-32\n")
	g.op("MOVQ dst+0(FP), DI")
	g.op("MOVQ r0+8(FP), SI")
	g.op("MOVQ r1+16(FP), DX")
	g.op("MOVQ n+24(FP), CX")
	g.op("SHRQ $4, CX")
	g.op("JZ done_pairRowsBF16")
	g.WriteString("loop_pairRowsBF16:\n")
	g.op("VMOVUPS 0(SI), Z0")
	g.op("VMOVUPS 0(DX), Z1")
	g.cvtneps2bf16(2, 0)
	g.cvtneps2bf16(3, 1)
	g.op("VPMOVZXWD Y2, Z2")
	g.op("VPMOVZXWD Y3, Z3")
	g.op("VPSLLD $16, Z3, Z3")
	g.op("VPORD Z3, Z2, Z2")
	g.op("VMOVDQU32 Z2, 0(DI)")
	g.op("ADDQ $64, SI")
	g.op("ADDQ $64, DX")
	g.op("ADDQ $64, DI")
	g.op("DECQ CX")
	g.op("JNZ loop_pairRowsBF16")
	g.WriteString("done_pairRowsBF16:\n")
	g.op("VZEROUPPER")
	g.op("RET\n")
}

// pairPanels writes
//
//	func pairPanelsBF16(dst *uint32, r0, r1 *float32, ld, kb, w, panels, ps int, load, store uint32)
//
// which packs kb steps of panels micro-panels of width w ≤ 32 from pairs
// of rows, rounding as it goes: step p of panel q holds words
// pair(r0[p·ld+q·w+c], r1[p·ld+q·w+c]), c < w, the lanes set in load read
// and the others zero, the lanes set in store written (lanes(w)). ld is
// the stride from one step's rows to the next's (two rows of the source),
// ps the panels' stride, both in floats.
func (g *gen) pairPanels() {
	g.WriteString("// func pairPanelsBF16(dst *uint32, r0, r1 *float32, ld, kb, w, panels, ps int, load, store uint32)\n")
	g.WriteString("TEXT ·pairPanelsBF16(SB), NOSPLIT, $0-72\n")
	g.op("MOVQ dst+0(FP), DI")
	g.op("MOVQ r0+8(FP), SI")
	g.op("MOVQ r1+16(FP), DX")
	g.op("MOVQ ld+24(FP), R8")
	g.op("SHLQ $2, R8")
	g.op("MOVQ kb+32(FP), CX")
	g.op("MOVQ w+40(FP), R9")
	g.op("SHLQ $2, R9")
	g.op("MOVQ panels+48(FP), R10")
	g.op("MOVQ ps+56(FP), R11")
	g.op("SHLQ $2, R11")
	g.op("MOVL load+64(FP), AX")
	g.op("KMOVW AX, K1")
	g.op("SHRL $16, AX")
	g.op("KMOVW AX, K2")
	g.op("MOVL store+68(FP), AX")
	g.op("KMOVW AX, K3")
	g.op("SHRL $16, AX")
	g.op("KMOVW AX, K4")
	g.op("TESTQ CX, CX")
	g.op("JZ done_pairPanelsBF16")
	g.op("TESTQ R10, R10")
	g.op("JZ done_pairPanelsBF16")
	g.op("CMPQ R9, $64")
	g.op("JLE steps16_pairPanelsBF16")
	g.WriteString("steps_pairPanelsBF16:\n")
	g.op("MOVQ SI, AX")
	g.op("MOVQ DX, BX")
	g.op("MOVQ DI, R12")
	g.op("MOVQ R10, R13")
	g.WriteString("panels_pairPanelsBF16:\n")
	g.op("VMOVUPS.Z (AX), K1, Z0")
	g.op("VMOVUPS.Z 64(AX), K2, Z1")
	g.op("VMOVUPS.Z (BX), K1, Z2")
	g.op("VMOVUPS.Z 64(BX), K2, Z3")
	for i := 0; i < 4; i++ {
		g.cvtneps2bf16(4+i, i)
	}
	for i := 4; i < 8; i++ {
		g.op("VPMOVZXWD Y%d, Z%d", i, i)
	}
	g.op("VPSLLD $16, Z6, Z6")
	g.op("VPSLLD $16, Z7, Z7")
	g.op("VPORD Z6, Z4, Z4")
	g.op("VPORD Z7, Z5, Z5")
	g.op("VMOVDQU32 Z4, K3, (R12)")
	g.op("VMOVDQU32 Z5, K4, 64(R12)")
	g.op("ADDQ R9, AX")
	g.op("ADDQ R9, BX")
	g.op("ADDQ R11, R12")
	g.op("DECQ R13")
	g.op("JNZ panels_pairPanelsBF16")
	g.op("ADDQ R8, SI")
	g.op("ADDQ R8, DX")
	g.op("ADDQ R9, DI")
	g.op("DECQ CX")
	g.op("JNZ steps_pairPanelsBF16")
	g.op("JMP done_pairPanelsBF16")
	// w ≤ 16 (the 12-row A panels): the low vector of each row only.
	g.WriteString("steps16_pairPanelsBF16:\n")
	g.op("MOVQ SI, AX")
	g.op("MOVQ DX, BX")
	g.op("MOVQ DI, R12")
	g.op("MOVQ R10, R13")
	g.WriteString("panels16_pairPanelsBF16:\n")
	g.op("VMOVUPS.Z (AX), K1, Z0")
	g.op("VMOVUPS.Z (BX), K1, Z2")
	g.cvtneps2bf16(4, 0)
	g.cvtneps2bf16(6, 2)
	g.op("VPMOVZXWD Y4, Z4")
	g.op("VPMOVZXWD Y6, Z6")
	g.op("VPSLLD $16, Z6, Z6")
	g.op("VPORD Z6, Z4, Z4")
	g.op("VMOVDQU32 Z4, K3, (R12)")
	g.op("ADDQ R9, AX")
	g.op("ADDQ R9, BX")
	g.op("ADDQ R11, R12")
	g.op("DECQ R13")
	g.op("JNZ panels16_pairPanelsBF16")
	g.op("ADDQ R8, SI")
	g.op("ADDQ R8, DX")
	g.op("ADDQ R9, DI")
	g.op("DECQ CX")
	g.op("JNZ steps16_pairPanelsBF16")
	g.WriteString("done_pairPanelsBF16:\n")
	g.op("VZEROUPPER")
	g.op("RET\n")
}

func main() {
	var g gen
	g.WriteString("// Code generated by bf16_gen.go; DO NOT EDIT.\n\n")
	g.WriteString("//go:build amd64 && !purego\n\n#include \"textflag.h\"\n\n")
	g.kernel()
	g.roundRow()
	g.pairRows()
	g.pairPanels()
	if err := os.WriteFile("bf16_amd64.s", g.Bytes(), 0o644); err != nil {
		panic(err)
	}
}

//go:build amd64 && !purego

#include "textflag.h"

// Horizontal sum of Y0's 8 lanes into X0's lowest.
#define HSUM8 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VPERMILPS $0x4e, X0, X1 \
	VADDPS X1, X0, X0 \
	VPERMILPS $0xb1, X0, X1 \
	VADDPS X1, X0, X0

// 32 bf16 weights at off(DI) against x' at 2*off(R10) (evenOdd's layout:
// per 32, 16 even-indexed then 16 odd-indexed values) into A, B, C, D.
#define BF16X32(off, A, B, C, D) \
	VMOVDQU off(DI), Y4 \
	VMOVDQU off+32(DI), Y5 \
	VPSLLD $16, Y4, Y6 \
	VPAND Y15, Y4, Y4 \
	VPSLLD $16, Y5, Y7 \
	VPAND Y15, Y5, Y5 \
	VFMADD231PS (2*off)(R10), Y6, A \
	VFMADD231PS (2*off+64)(R10), Y4, B \
	VFMADD231PS (2*off+32)(R10), Y7, C \
	VFMADD231PS (2*off+96)(R10), Y5, D

// func gemvBF16AVX2(k, n int, w *uint16, x, y *float32)
// gemvBF16AVX512 on 256-bit registers: 64 weights at a time into eight
// accumulators.
TEXT ·gemvBF16AVX2(SB), NOSPLIT, $0-40
	MOVQ k+0(FP), CX
	MOVQ n+8(FP), DX
	MOVQ w+16(FP), DI
	MOVQ x+24(FP), SI
	MOVQ y+32(FP), R9
	MOVL $0xffff0000, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15

row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	MOVQ SI, R10
	MOVQ CX, BX

loop:
	BF16X32(0, Y0, Y1, Y2, Y3)
	BF16X32(64, Y8, Y9, Y10, Y11)
	ADDQ $128, DI
	ADDQ $256, R10
	SUBQ $64, BX
	JNZ loop

	VADDPS Y8, Y0, Y0
	VADDPS Y9, Y1, Y1
	VADDPS Y10, Y2, Y2
	VADDPS Y11, Y3, Y3
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM8
	VMOVSS X0, (R9)
	ADDQ $4, R9
	DECQ DX
	JNZ row
	VZEROUPPER
	RET

// One int8 block (32 weights) at off(DI), its scale at soff(R12), x at
// 4*off(R10), into A.
#define INT8X32(off, soff, A) \
	VPMOVSXBD off(DI), Y4 \
	VPMOVSXBD off+8(DI), Y5 \
	VPMOVSXBD off+16(DI), Y6 \
	VPMOVSXBD off+24(DI), Y7 \
	VCVTDQ2PS Y4, Y4 \
	VCVTDQ2PS Y5, Y5 \
	VCVTDQ2PS Y6, Y6 \
	VCVTDQ2PS Y7, Y7 \
	VMULPS (4*off)(R10), Y4, Y4 \
	VFMADD231PS (4*off+32)(R10), Y5, Y4 \
	VMULPS (4*off+64)(R10), Y6, Y6 \
	VFMADD231PS (4*off+96)(R10), Y7, Y6 \
	VADDPS Y6, Y4, Y4 \
	VBROADCASTSS soff(R12), Y8 \
	VFMADD231PS Y4, Y8, A

// func gemvInt8AVX2(k, n int, q *int8, d, x, y *float32)
// gemvInt8AVX512 on 256-bit registers: two blocks at a time.
TEXT ·gemvInt8AVX2(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ n+8(FP), DX
	MOVQ q+16(FP), DI
	MOVQ d+24(FP), R12
	MOVQ x+32(FP), SI
	MOVQ y+40(FP), R9

irow:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ SI, R10
	MOVQ CX, BX

iloop:
	INT8X32(0, 0, Y0)
	INT8X32(32, 4, Y1)
	ADDQ $64, DI
	ADDQ $256, R10
	ADDQ $8, R12
	SUBQ $64, BX
	JNZ iloop

	VADDPS Y1, Y0, Y0
	HSUM8
	VMOVSS X0, (R9)
	ADDQ $4, R9
	DECQ DX
	JNZ irow
	VZEROUPPER
	RET

// func widenBF16AVX2(n int, src *uint16, dst *float32)
// dst[j] = float32 of bfloat16 src[j] for j < n, n a multiple of 16.
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ dst+16(FP), DI
	SHRQ $4, CX
	JZ wdone

wloop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPSLLD $16, Y0, Y0
	VPSLLD $16, Y1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ wloop

wdone:
	VZEROUPPER
	RET

// func widenInt8AVX2(blocks int, q *int8, d, dst *float32)
// dst[j] = d[j/32]·q[j] for j < 32·blocks.
TEXT ·widenInt8AVX2(SB), NOSPLIT, $0-32
	MOVQ blocks+0(FP), CX
	MOVQ q+8(FP), SI
	MOVQ d+16(FP), DX
	MOVQ dst+24(FP), DI
	TESTQ CX, CX
	JZ qdone

qloop:
	VBROADCASTSS (DX), Y8
	VPMOVSXBD (SI), Y0
	VPMOVSXBD 8(SI), Y1
	VPMOVSXBD 16(SI), Y2
	VPMOVSXBD 24(SI), Y3
	VCVTDQ2PS Y0, Y0
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VMULPS Y8, Y0, Y0
	VMULPS Y8, Y1, Y1
	VMULPS Y8, Y2, Y2
	VMULPS Y8, Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $32, SI
	ADDQ $4, DX
	ADDQ $128, DI
	DECQ CX
	JNZ qloop

qdone:
	VZEROUPPER
	RET

//go:build amd64 && !purego

#include "textflag.h"

// Horizontal sum of Z0's 16 lanes into X0's lowest.
#define HSUM \
	VEXTRACTF64X4 $1, Z0, Y1 \
	VADDPS Y1, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VPERMILPS $0x4e, X0, X1 \
	VADDPS X1, X0, X0 \
	VPERMILPS $0xb1, X0, X1 \
	VADDPS X1, X0, X0

// func gemvBF16AVX512(k, n int, w *uint16, x, y *float32)
// Rows go 128 weights at a time into eight accumulators (four measured
// half the bandwidth from memory: too few loads in flight), then a last
// 64 when k is an odd multiple of 64.
TEXT ·gemvBF16AVX512(SB), NOSPLIT, $0-40
	MOVQ k+0(FP), CX
	MOVQ n+8(FP), DX
	MOVQ w+16(FP), DI
	MOVQ x+24(FP), SI
	MOVQ y+32(FP), R9
	MOVL $0xffff0000, AX
	VPBROADCASTD AX, Z31

row:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ SI, R10
	MOVQ CX, BX

loop:
	CMPQ BX, $128
	JLT last
	VMOVDQU32 (DI), Z4
	VMOVDQU32 64(DI), Z5
	VMOVDQU32 128(DI), Z8
	VMOVDQU32 192(DI), Z9
	VPSLLD $16, Z4, Z6
	VPANDD Z31, Z4, Z4
	VPSLLD $16, Z5, Z7
	VPANDD Z31, Z5, Z5
	VPSLLD $16, Z8, Z10
	VPANDD Z31, Z8, Z8
	VPSLLD $16, Z9, Z11
	VPANDD Z31, Z9, Z9
	VFMADD231PS (R10), Z6, Z0
	VFMADD231PS 64(R10), Z4, Z1
	VFMADD231PS 128(R10), Z7, Z2
	VFMADD231PS 192(R10), Z5, Z3
	VFMADD231PS 256(R10), Z10, Z12
	VFMADD231PS 320(R10), Z8, Z13
	VFMADD231PS 384(R10), Z11, Z14
	VFMADD231PS 448(R10), Z9, Z15
	ADDQ $256, DI
	ADDQ $512, R10
	SUBQ $128, BX
	JMP loop

last:
	TESTQ BX, BX
	JZ sum
	VMOVDQU32 (DI), Z4
	VMOVDQU32 64(DI), Z5
	VPSLLD $16, Z4, Z6
	VPANDD Z31, Z4, Z4
	VPSLLD $16, Z5, Z7
	VPANDD Z31, Z5, Z5
	VFMADD231PS (R10), Z6, Z0
	VFMADD231PS 64(R10), Z4, Z1
	VFMADD231PS 128(R10), Z7, Z2
	VFMADD231PS 192(R10), Z5, Z3
	ADDQ $128, DI

sum:
	VADDPS Z12, Z0, Z0
	VADDPS Z13, Z1, Z1
	VADDPS Z14, Z2, Z2
	VADDPS Z15, Z3, Z3
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	HSUM
	VMOVSS X0, (R9)
	ADDQ $4, R9
	DECQ DX
	JNZ row
	VZEROUPPER
	RET

// Two int8 blocks (64 weights) from (DI), scales (R12), x (R10), into
// accumulators A and B.
#define INT8PAIR(off, xoff, soff, A, B) \
	VPMOVSXBD off(DI), Z4 \
	VPMOVSXBD off+16(DI), Z5 \
	VPMOVSXBD off+32(DI), Z6 \
	VPMOVSXBD off+48(DI), Z7 \
	VCVTDQ2PS Z4, Z4 \
	VCVTDQ2PS Z5, Z5 \
	VCVTDQ2PS Z6, Z6 \
	VCVTDQ2PS Z7, Z7 \
	VMULPS xoff(R10), Z4, Z4 \
	VFMADD231PS xoff+64(R10), Z5, Z4 \
	VMULPS xoff+128(R10), Z6, Z6 \
	VFMADD231PS xoff+192(R10), Z7, Z6 \
	VBROADCASTSS soff(R12), Z8 \
	VBROADCASTSS soff+4(R12), Z9 \
	VFMADD231PS Z4, Z8, A \
	VFMADD231PS Z6, Z9, B

// func gemvInt8AVX512(k, n int, q *int8, d, x, y *float32)
// Rows go four blocks (128 weights) at a time into four accumulators,
// then a last two when k is an odd multiple of 64.
TEXT ·gemvInt8AVX512(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ n+8(FP), DX
	MOVQ q+16(FP), DI
	MOVQ d+24(FP), R12
	MOVQ x+32(FP), SI
	MOVQ y+40(FP), R9

irow:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ SI, R10
	MOVQ CX, BX

iloop:
	CMPQ BX, $128
	JLT ilast
	INT8PAIR(0, 0, 0, Z0, Z1)
	INT8PAIR(64, 256, 8, Z2, Z3)
	ADDQ $128, DI
	ADDQ $512, R10
	ADDQ $16, R12
	SUBQ $128, BX
	JMP iloop

ilast:
	TESTQ BX, BX
	JZ isum
	INT8PAIR(0, 0, 0, Z0, Z1)
	ADDQ $64, DI
	ADDQ $8, R12

isum:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	HSUM
	VMOVSS X0, (R9)
	ADDQ $4, R9
	DECQ DX
	JNZ irow
	VZEROUPPER
	RET

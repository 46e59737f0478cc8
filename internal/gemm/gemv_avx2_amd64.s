//go:build amd64 && !purego

#include "textflag.h"

// func gemvNAVX2(k, n int, x, b *float32, ldb int, c *float32, beta float32)
// c[j] = Σ_p x[p]·b[p*ldb+j] + beta·c[j] for j < n, n a multiple of 8,
// with c not read when beta is ±0. Columns go 64 at a time (eight
// accumulators), then 8 at a time.
TEXT ·gemvNAVX2(SB), NOSPLIT, $0-52
	MOVQ k+0(FP), CX
	MOVQ n+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R8
	SHLQ $2, R8
	MOVQ c+40(FP), R9
	VBROADCASTSS beta+48(FP), Y15
	MOVL beta+48(FP), R12
	SHLL $1, R12 // zero iff beta is ±0

wide:
	CMPQ DX, $64
	JLT narrow
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, BX
	TESTQ BX, BX
	JZ widebeta

wideloop:
	VBROADCASTSS (R10), Y8
	VFMADD231PS (R11), Y8, Y0
	VFMADD231PS 32(R11), Y8, Y1
	VFMADD231PS 64(R11), Y8, Y2
	VFMADD231PS 96(R11), Y8, Y3
	VFMADD231PS 128(R11), Y8, Y4
	VFMADD231PS 160(R11), Y8, Y5
	VFMADD231PS 192(R11), Y8, Y6
	VFMADD231PS 224(R11), Y8, Y7
	ADDQ $4, R10
	ADDQ R8, R11
	DECQ BX
	JNZ wideloop

widebeta:
	TESTL R12, R12
	JZ widestore
	VFMADD231PS (R9), Y15, Y0
	VFMADD231PS 32(R9), Y15, Y1
	VFMADD231PS 64(R9), Y15, Y2
	VFMADD231PS 96(R9), Y15, Y3
	VFMADD231PS 128(R9), Y15, Y4
	VFMADD231PS 160(R9), Y15, Y5
	VFMADD231PS 192(R9), Y15, Y6
	VFMADD231PS 224(R9), Y15, Y7

widestore:
	VMOVUPS Y0, (R9)
	VMOVUPS Y1, 32(R9)
	VMOVUPS Y2, 64(R9)
	VMOVUPS Y3, 96(R9)
	VMOVUPS Y4, 128(R9)
	VMOVUPS Y5, 160(R9)
	VMOVUPS Y6, 192(R9)
	VMOVUPS Y7, 224(R9)
	ADDQ $256, DI
	ADDQ $256, R9
	SUBQ $64, DX
	JMP wide

narrow:
	TESTQ DX, DX
	JZ done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, BX
	SHRQ $1, BX // two steps of p at a time, into two accumulators
	JZ narrowodd

narrowloop:
	VBROADCASTSS (R10), Y8
	VBROADCASTSS 4(R10), Y9
	VFMADD231PS (R11), Y8, Y0
	VFMADD231PS (R11)(R8*1), Y9, Y1
	ADDQ $8, R10
	LEAQ (R11)(R8*2), R11
	DECQ BX
	JNZ narrowloop

narrowodd:
	TESTQ $1, CX
	JZ narrowbeta
	VBROADCASTSS (R10), Y8
	VFMADD231PS (R11), Y8, Y0

narrowbeta:
	VADDPS Y1, Y0, Y0
	TESTL R12, R12
	JZ narrowstore
	VFMADD231PS (R9), Y15, Y0

narrowstore:
	VMOVUPS Y0, (R9)
	ADDQ $32, DI
	ADDQ $32, R9
	SUBQ $8, DX
	JMP narrow

done:
	VZEROUPPER
	RET

// func gemvTAVX2(k, n int, x, b *float32, ldb int, c *float32, beta float32)
// c[j] = Σ_{p<k} x[p]·b[j*ldb+p] + beta·c[j] for j < n, k a multiple of
// 8, with c not read when beta is ±0: dot products of x with rows of b,
// four rows at a time with two accumulators each (16 steps of p per
// iteration), then one row at a time.
TEXT ·gemvTAVX2(SB), NOSPLIT, $0-52
	MOVQ k+0(FP), CX
	SHRQ $3, CX // chunks of 8
	MOVQ n+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R13 // 3 rows
	MOVQ c+40(FP), R9
	VBROADCASTSS beta+48(FP), X15
	MOVL beta+48(FP), R12
	SHLL $1, R12

rows4:
	CMPQ DX, $4
	JLT rows1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, BX
	SHRQ $1, BX
	JZ odd4

loop4:
	VMOVUPS (R10), Y8
	VMOVUPS 32(R10), Y9
	VFMADD231PS (R11), Y8, Y0
	VFMADD231PS (R11)(R8*1), Y8, Y1
	VFMADD231PS (R11)(R8*2), Y8, Y2
	VFMADD231PS (R11)(R13*1), Y8, Y3
	VFMADD231PS 32(R11), Y9, Y4
	VFMADD231PS 32(R11)(R8*1), Y9, Y5
	VFMADD231PS 32(R11)(R8*2), Y9, Y6
	VFMADD231PS 32(R11)(R13*1), Y9, Y7
	ADDQ $64, R10
	ADDQ $64, R11
	DECQ BX
	JNZ loop4

odd4:
	TESTQ $1, CX
	JZ reduce4
	VMOVUPS (R10), Y8
	VFMADD231PS (R11), Y8, Y0
	VFMADD231PS (R11)(R8*1), Y8, Y1
	VFMADD231PS (R11)(R8*2), Y8, Y2
	VFMADD231PS (R11)(R13*1), Y8, Y3

reduce4:
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	VEXTRACTF128 $1, Y0, X4
	VEXTRACTF128 $1, Y1, X5
	VEXTRACTF128 $1, Y2, X6
	VEXTRACTF128 $1, Y3, X7
	VADDPS X4, X0, X0
	VADDPS X5, X1, X1
	VADDPS X6, X2, X2
	VADDPS X7, X3, X3
	VHADDPS X1, X0, X0
	VHADDPS X3, X2, X2
	VHADDPS X2, X0, X0 // the four dot products
	TESTL R12, R12
	JZ store4
	VFMADD231PS (R9), X15, X0

store4:
	VMOVUPS X0, (R9)
	LEAQ (DI)(R8*4), DI
	ADDQ $16, R9
	SUBQ $4, DX
	JMP rows4

rows1:
	TESTQ DX, DX
	JZ tdone
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, BX
	SHRQ $1, BX
	JZ odd1

loop1:
	VMOVUPS (R10), Y8
	VMOVUPS 32(R10), Y9
	VFMADD231PS (R11), Y8, Y0
	VFMADD231PS 32(R11), Y9, Y1
	ADDQ $64, R10
	ADDQ $64, R11
	DECQ BX
	JNZ loop1

odd1:
	TESTQ $1, CX
	JZ reduce1
	VMOVUPS (R10), Y8
	VFMADD231PS (R11), Y8, Y0

reduce1:
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X4
	VADDPS X4, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	TESTL R12, R12
	JZ store1
	VFMADD231SS (R9), X15, X0

store1:
	VMOVSS X0, (R9)
	ADDQ R8, DI
	ADDQ $4, R9
	DECQ DX
	JMP rows1

tdone:
	VZEROUPPER
	RET

//go:build amd64 && !purego

#include "textflag.h"

// func copyPanelAVX512(dst, src *float32, ld, kb, w int, load, store uint32)
TEXT ·copyPanelAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), R8
	SHLQ $2, R8
	MOVQ kb+24(FP), CX
	MOVQ w+32(FP), R9
	SHLQ $2, R9
	MOVL load+40(FP), AX
	KMOVW AX, K1
	SHRL $16, AX
	KMOVW AX, K2
	MOVL store+44(FP), BX
	KMOVW BX, K3
	SHRL $16, BX
	KMOVW BX, K4

copy:
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z 64(SI), K2, Z1
	VMOVUPS Z0, K3, (DI)
	VMOVUPS Z1, K4, 64(DI)
	ADDQ R8, SI
	ADDQ R9, DI
	DECQ CX
	JNZ copy
	VZEROUPPER
	RET

// func copyPanelsAVX512(dst, src *float32, ld, kb, w, panels, ps int, store uint32)
// Packs panels full micro-panels of width w ≤ 32, ps floats apart:
// dst[q*ps+p*w+c] = src[p*ld+q*w+c]. Steps are the outer loop so that src is
// read row by row; store is lanes(w).
TEXT ·copyPanelsAVX512(SB), NOSPLIT, $0-60
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), R8
	SHLQ $2, R8
	MOVQ kb+24(FP), CX
	MOVQ w+32(FP), R9
	SHLQ $2, R9
	MOVQ ps+48(FP), R11
	SHLQ $2, R11
	MOVQ panels+40(FP), R10
	MOVL store+56(FP), AX
	KMOVW AX, K1
	SHRL $16, AX
	KMOVW AX, K2

steps:
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ R10, DX

panels:
	VMOVUPS.Z (AX), K1, Z0
	VMOVUPS.Z 64(AX), K2, Z1
	VMOVUPS Z0, K1, (BX)
	VMOVUPS Z1, K2, 64(BX)
	ADDQ R9, AX
	ADDQ R11, BX
	DECQ DX
	JNZ panels
	ADDQ R8, SI
	ADDQ R9, DI
	DECQ CX
	JNZ steps
	VZEROUPPER
	RET

//go:build amd64 && !purego

#include "textflag.h"

// The constants of sumExpAVX2, four lanes each: log₂e, 1.5·2⁵² (adding it
// rounds to an integer in the low bits), ln 2 in two parts (math.Exp's),
// −708, the Taylor coefficients 1/i! for i ≤ 13, and the exponent bias.
DATA log2e<>+0(SB)/8, $0x3ff71547652b82fe
DATA log2e<>+8(SB)/8, $0x3ff71547652b82fe
DATA log2e<>+16(SB)/8, $0x3ff71547652b82fe
DATA log2e<>+24(SB)/8, $0x3ff71547652b82fe
GLOBL log2e<>(SB), RODATA|NOPTR, $32
DATA shifter<>+0(SB)/8, $0x4338000000000000
DATA shifter<>+8(SB)/8, $0x4338000000000000
DATA shifter<>+16(SB)/8, $0x4338000000000000
DATA shifter<>+24(SB)/8, $0x4338000000000000
GLOBL shifter<>(SB), RODATA|NOPTR, $32
DATA ln2hi<>+0(SB)/8, $0x3fe62e42fee00000
DATA ln2hi<>+8(SB)/8, $0x3fe62e42fee00000
DATA ln2hi<>+16(SB)/8, $0x3fe62e42fee00000
DATA ln2hi<>+24(SB)/8, $0x3fe62e42fee00000
GLOBL ln2hi<>(SB), RODATA|NOPTR, $32
DATA ln2lo<>+0(SB)/8, $0x3dea39ef35793c76
DATA ln2lo<>+8(SB)/8, $0x3dea39ef35793c76
DATA ln2lo<>+16(SB)/8, $0x3dea39ef35793c76
DATA ln2lo<>+24(SB)/8, $0x3dea39ef35793c76
GLOBL ln2lo<>(SB), RODATA|NOPTR, $32
DATA expmin<>+0(SB)/8, $0xc086200000000000
DATA expmin<>+8(SB)/8, $0xc086200000000000
DATA expmin<>+16(SB)/8, $0xc086200000000000
DATA expmin<>+24(SB)/8, $0xc086200000000000
GLOBL expmin<>(SB), RODATA|NOPTR, $32
DATA c0<>+0(SB)/8, $0x3ff0000000000000
DATA c0<>+8(SB)/8, $0x3ff0000000000000
DATA c0<>+16(SB)/8, $0x3ff0000000000000
DATA c0<>+24(SB)/8, $0x3ff0000000000000
GLOBL c0<>(SB), RODATA|NOPTR, $32
DATA c1<>+0(SB)/8, $0x3ff0000000000000
DATA c1<>+8(SB)/8, $0x3ff0000000000000
DATA c1<>+16(SB)/8, $0x3ff0000000000000
DATA c1<>+24(SB)/8, $0x3ff0000000000000
GLOBL c1<>(SB), RODATA|NOPTR, $32
DATA c2<>+0(SB)/8, $0x3fe0000000000000
DATA c2<>+8(SB)/8, $0x3fe0000000000000
DATA c2<>+16(SB)/8, $0x3fe0000000000000
DATA c2<>+24(SB)/8, $0x3fe0000000000000
GLOBL c2<>(SB), RODATA|NOPTR, $32
DATA c3<>+0(SB)/8, $0x3fc5555555555555
DATA c3<>+8(SB)/8, $0x3fc5555555555555
DATA c3<>+16(SB)/8, $0x3fc5555555555555
DATA c3<>+24(SB)/8, $0x3fc5555555555555
GLOBL c3<>(SB), RODATA|NOPTR, $32
DATA c4<>+0(SB)/8, $0x3fa5555555555555
DATA c4<>+8(SB)/8, $0x3fa5555555555555
DATA c4<>+16(SB)/8, $0x3fa5555555555555
DATA c4<>+24(SB)/8, $0x3fa5555555555555
GLOBL c4<>(SB), RODATA|NOPTR, $32
DATA c5<>+0(SB)/8, $0x3f81111111111111
DATA c5<>+8(SB)/8, $0x3f81111111111111
DATA c5<>+16(SB)/8, $0x3f81111111111111
DATA c5<>+24(SB)/8, $0x3f81111111111111
GLOBL c5<>(SB), RODATA|NOPTR, $32
DATA c6<>+0(SB)/8, $0x3f56c16c16c16c17
DATA c6<>+8(SB)/8, $0x3f56c16c16c16c17
DATA c6<>+16(SB)/8, $0x3f56c16c16c16c17
DATA c6<>+24(SB)/8, $0x3f56c16c16c16c17
GLOBL c6<>(SB), RODATA|NOPTR, $32
DATA c7<>+0(SB)/8, $0x3f2a01a01a01a01a
DATA c7<>+8(SB)/8, $0x3f2a01a01a01a01a
DATA c7<>+16(SB)/8, $0x3f2a01a01a01a01a
DATA c7<>+24(SB)/8, $0x3f2a01a01a01a01a
GLOBL c7<>(SB), RODATA|NOPTR, $32
DATA c8<>+0(SB)/8, $0x3efa01a01a01a01a
DATA c8<>+8(SB)/8, $0x3efa01a01a01a01a
DATA c8<>+16(SB)/8, $0x3efa01a01a01a01a
DATA c8<>+24(SB)/8, $0x3efa01a01a01a01a
GLOBL c8<>(SB), RODATA|NOPTR, $32
DATA c9<>+0(SB)/8, $0x3ec71de3a556c734
DATA c9<>+8(SB)/8, $0x3ec71de3a556c734
DATA c9<>+16(SB)/8, $0x3ec71de3a556c734
DATA c9<>+24(SB)/8, $0x3ec71de3a556c734
GLOBL c9<>(SB), RODATA|NOPTR, $32
DATA c10<>+0(SB)/8, $0x3e927e4fb7789f5c
DATA c10<>+8(SB)/8, $0x3e927e4fb7789f5c
DATA c10<>+16(SB)/8, $0x3e927e4fb7789f5c
DATA c10<>+24(SB)/8, $0x3e927e4fb7789f5c
GLOBL c10<>(SB), RODATA|NOPTR, $32
DATA c11<>+0(SB)/8, $0x3e5ae64567f544e4
DATA c11<>+8(SB)/8, $0x3e5ae64567f544e4
DATA c11<>+16(SB)/8, $0x3e5ae64567f544e4
DATA c11<>+24(SB)/8, $0x3e5ae64567f544e4
GLOBL c11<>(SB), RODATA|NOPTR, $32
DATA c12<>+0(SB)/8, $0x3e21eed8eff8d898
DATA c12<>+8(SB)/8, $0x3e21eed8eff8d898
DATA c12<>+16(SB)/8, $0x3e21eed8eff8d898
DATA c12<>+24(SB)/8, $0x3e21eed8eff8d898
GLOBL c12<>(SB), RODATA|NOPTR, $32
DATA c13<>+0(SB)/8, $0x3de6124613a86d09
DATA c13<>+8(SB)/8, $0x3de6124613a86d09
DATA c13<>+16(SB)/8, $0x3de6124613a86d09
DATA c13<>+24(SB)/8, $0x3de6124613a86d09
GLOBL c13<>(SB), RODATA|NOPTR, $32
DATA bias<>+0(SB)/8, $1023
DATA bias<>+8(SB)/8, $1023
DATA bias<>+16(SB)/8, $1023
DATA bias<>+24(SB)/8, $1023
GLOBL bias<>(SB), RODATA|NOPTR, $32

// func sumExpAVX2(x *float64, n int, hi float64) float64
// Σ e^(x[i] − hi) over n values, n a multiple of 4, each x[i] ≤ hi and
// not NaN, hi finite; terms with x[i] − hi < −708 count 0. Four at a time:
// d = k·ln 2 + r with k = round(d·log₂e) and |r| ≤ ln 2/2, e^r by its
// Taylor series to r¹³ in Estrin's scheme (the remainder is below 10⁻¹⁷
// of it), times 2^k put in the exponent bits.
TEXT ·sumExpAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD hi+16(FP), Y15
	VXORPD Y14, Y14, Y14
	SHRQ $2, CX
	JZ done

loop:
	VMOVUPD (SI), Y0
	VSUBPD Y15, Y0, Y0                   // d = x − hi
	VCMPPD $0x1d, expmin<>(SB), Y0, Y13  // d ≥ −708 (GE_OQ): false for −Inf
	VMOVUPD log2e<>(SB), Y1
	VFMADD213PD shifter<>(SB), Y0, Y1    // d·log₂e + 1.5·2⁵²: k in the low bits
	VSUBPD shifter<>(SB), Y1, Y2         // k
	VMOVAPD Y0, Y3
	VFNMADD231PD ln2hi<>(SB), Y2, Y3
	VFNMADD231PD ln2lo<>(SB), Y2, Y3     // r = d − k·ln 2
	VMULPD Y3, Y3, Y4                    // r²
	VMULPD Y4, Y4, Y5                    // r⁴
	VMULPD Y5, Y5, Y6                    // r⁸
	VMOVUPD c1<>(SB), Y7
	VFMADD213PD c0<>(SB), Y3, Y7         // c0 + c1·r
	VMOVUPD c3<>(SB), Y8
	VFMADD213PD c2<>(SB), Y3, Y8
	VMOVUPD c5<>(SB), Y9
	VFMADD213PD c4<>(SB), Y3, Y9
	VMOVUPD c7<>(SB), Y10
	VFMADD213PD c6<>(SB), Y3, Y10
	VMOVUPD c9<>(SB), Y11
	VFMADD213PD c8<>(SB), Y3, Y11
	VMOVUPD c11<>(SB), Y12
	VFMADD213PD c10<>(SB), Y3, Y12
	VMOVUPD c13<>(SB), Y0
	VFMADD213PD c12<>(SB), Y3, Y0
	VFMADD231PD Y8, Y4, Y7               // (c0 + c1·r) + (c2 + c3·r)·r²
	VFMADD231PD Y10, Y4, Y9
	VFMADD231PD Y12, Y4, Y11
	VFMADD231PD Y9, Y5, Y7               // … + r⁴·(…)
	VFMADD231PD Y0, Y5, Y11
	VFMADD231PD Y11, Y6, Y7              // e^r
	VPADDQ bias<>(SB), Y1, Y1
	VPSLLQ $52, Y1, Y1                   // 2^k
	VMULPD Y1, Y7, Y7
	VANDPD Y13, Y7, Y7
	VADDPD Y7, Y14, Y14
	ADDQ $32, SI
	DECQ CX
	JNZ loop

done:
	VEXTRACTF128 $1, Y14, X0
	VADDPD X0, X14, X0
	VHADDPD X0, X0, X0
	VZEROUPPER
	MOVSD X0, ret+24(FP)
	RET

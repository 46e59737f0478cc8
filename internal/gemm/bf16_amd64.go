//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

//go:generate go run bf16_gen.go

// kernelBF16AVX512 is the 12×32 AVX-512 BF16 kernel over word panels
// (bf16.go): 24 zmm accumulators, VDPBF16PS (bf16_amd64.s).
//
//go:noescape
func kernelBF16AVX512(k int, a, b, c *float32, ldc int, alpha, beta float32)

// roundRowBF16 sets dst[j] = pair(src[2j], src[2j+1]) for j < n/2, n a
// multiple of 32, with VCVTNE2PS2BF16.
//
//go:noescape
func roundRowBF16(dst *uint32, src *float32, n int)

// pairRowsBF16 sets dst[j] = pair(r0[j], r1[j]) for j < n, n a multiple
// of 16, with VCVTNEPS2BF16.
//
//go:noescape
func pairRowsBF16(dst *uint32, r0, r1 *float32, n int)

// bf16Native says the CPU has AVX-512 BF16 (and AVX-512 F, BW for the
// word moves).
var bf16Native = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512BF16

// bf16HalfRate says the CPU has AMX (Intel, Sapphire Rapids on): there
// VDPBF16PS issues on one port where VFMADD231PS issues on two, so the
// bf16 kernel's two multiply-adds an instruction run at the float32 rate
// at best. Measured on a 16-core Xeon with AMX-BF16: the GPT step 0.67–0.79×
// float32's speed in bf16, the ViT step 0.71–0.79× (docs/speed.md). zoo
// does not use AMX's tile instructions.
var bf16HalfRate = bf16Native && cpu.X86.HasAMXBF16

var bf16AVX512Kernel = &kernel{name: "bf16-avx512", mr: 12, nr: 32, fn: kernelBF16AVX512}

// activeBF16 is the kernel SgemmBF16 uses.
var activeBF16 = bf16Kernels()[0]

// bf16Kernels lists the bf16 kernels this CPU can run, fastest first.
func bf16Kernels() []*kernel {
	if bf16Native {
		return []*kernel{bf16AVX512Kernel, bf16GoKernel}
	}
	return []*kernel{bf16GoKernel}
}

// useBF16Asm selects the assembly rounding routines where the CPU has
// them; tests clear it to check the Go ones.
var useBF16Asm = bf16Native

// roundRow sets dst[j] = pair(src[2j], src[2j+1]), zero-padding an odd
// last pair (roundRowGo).
func roundRow(dst []uint32, src []float32) {
	if !useBF16Asm {
		roundRowGo(dst, src)
		return
	}
	n := len(src) &^ 31
	if n > 0 {
		_ = dst[n/2-1]
		roundRowBF16(&dst[0], &src[0], n)
	}
	if r := len(src) - n; r > 0 { // the tail through a zero-padded step
		var in [32]float32
		var out [16]uint32
		copy(in[:], src[n:])
		roundRowBF16(&out[0], &in[0], 32)
		copy(dst[n/2:][:(r+1)/2], out[:])
	}
}

// pairRows sets dst[j] = pair(r0[j], r1[j]), r1 nil meaning zeros
// (pairRowsGo).
func pairRows(dst []uint32, r0, r1 []float32) {
	if !useBF16Asm {
		pairRowsGo(dst, r0, r1)
		return
	}
	var zeros [16]float32
	for len(r0) > 0 {
		n := len(r0) &^ 15
		if n == 0 { // the tail through zero-padded steps
			var in0, in1 [16]float32
			var out [16]uint32
			copy(in0[:], r0)
			if r1 != nil {
				copy(in1[:], r1)
			}
			pairRowsBF16(&out[0], &in0[0], &in1[0], 16)
			copy(dst[:len(r0)], out[:])
			return
		}
		_ = dst[n-1]
		if r1 == nil {
			for j := 0; j < n; j += 16 { // rows of zeros: 16 at a time
				pairRowsBF16(&dst[j], &r0[j], &zeros[0], 16)
			}
		} else {
			_ = r1[n-1]
			pairRowsBF16(&dst[0], &r0[0], &r1[0], n)
			r1 = r1[n:]
		}
		dst, r0 = dst[n:], r0[n:]
	}
}

// pairPanelsBF16 packs kb steps of panels micro-panels of width w ≤ 32
// from pairs of rows (r1 = r0 + ld/2 in the source), rounding: see
// bf16_gen.go.
//
//go:noescape
func pairPanelsBF16(dst *uint32, r0, r1 *float32, ld, kb, w, panels, ps int, load, store uint32)

// pairPanels packs kb steps of columns [0, n) of src (row stride ld) into
// ⌈n/w⌉ micro-panels of width w, ps apart: word c of step p of panel q is
// pair(src[2p][q·w+c], src[2p+1][q·w+c]), zero past n (pairPanelsGo).
func pairPanels(dst, src []float32, ld, kb, w, n, ps int) {
	if !useBF16Asm || w > 32 {
		pairPanelsGo(dst, src, ld, kb, w, n, ps)
		return
	}
	panels := (n + w - 1) / w
	_ = dst[(panels-1)*ps+kb*w-1]
	_ = src[(2*kb-1)*ld+n-1]
	full := n / w
	dw := words(dst)
	if full > 0 {
		pairPanelsBF16(&dw[0], &src[0], &src[ld], 2*ld, kb, w, full, ps, lanes(w), lanes(w))
	}
	if rem := n - full*w; rem > 0 {
		pairPanelsBF16(&dw[full*ps], &src[full*w], &src[ld+full*w], 2*ld, kb, w, 1, ps, lanes(rem), lanes(w))
	}
}

//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

// copyPanelsAVX512 packs panels full micro-panels of width w ≤ 32 (packCopy
// with n = panels·w), reading src a row at a time; store is lanes(w).
//
//go:noescape
func copyPanelsAVX512(dst, src *float32, ld, kb, w, panels, ps int, store uint32)

// copyPanelAVX512 packs one micro-panel of width w ≤ 32 from the lanes of
// each step set in load (lanes(valid)), zeroing the others without reading
// memory for them; store is lanes(w).
//
//go:noescape
func copyPanelAVX512(dst, src *float32, ld, kb, w int, load, store uint32)

// Generated 16×16-block transposes (gen_kernels.go): transposeW packs one
// full micro-panel of width W, dst[p*W+r] = src[r*ld+p], for kb a multiple
// of 16.

//go:noescape
func transpose6(dst, src *float32, ld, kb int)

//go:noescape
func transpose12(dst, src *float32, ld, kb int)

//go:noescape
func transpose16(dst, src *float32, ld, kb int)

//go:noescape
func transpose32(dst, src *float32, ld, kb int)

// transpose16AVX2 is transpose16 for AVX2 machines: one full micro-panel
// of width 16, dst[p*16+r] = src[r*ld+p], for kb a multiple of 8
// (pack_avx2_amd64.s).
//
//go:noescape
func transpose16AVX2(dst, src *float32, ld, kb int)

// asmTrans16AVX2 selects transpose16AVX2 where the AVX-512 routines are
// missing; tests clear it to check the Go ones.
var asmTrans16AVX2 = cpu.X86.HasAVX2

// asmPack selects the AVX-512 packing routines; tests clear it to check the
// Go ones.
var asmPack = cpu.X86.HasAVX512F

// lanes is the mask of the first n ≤ 32 lanes of a pair of zmm registers.
func lanes(n int) uint32 { return uint32(1<<n - 1) }

// packCopy packs n columns of src into ⌈n/w⌉ micro-panels (see pack.go).
func packCopy(dst, src []float32, ld, kb, w, n, ps int) {
	if !asmPack || w > 32 || kb == 0 {
		packCopyGo(dst, src, ld, kb, w, n, ps)
		return
	}
	full := n / w
	if full > 0 {
		_ = dst[(full-1)*ps+kb*w-1]
		_ = src[(kb-1)*ld+full*w-1]
		copyPanelsAVX512(&dst[0], &src[0], ld, kb, w, full, ps, lanes(w))
	}
	if rem := n - full*w; rem > 0 {
		d, s := dst[full*ps:][:kb*w], src[full*w:]
		_ = s[(kb-1)*ld+rem-1]
		copyPanelAVX512(&d[0], &s[0], ld, kb, w, lanes(rem), lanes(w))
	}
}

// packTrans packs n rows of src into ⌈n/w⌉ micro-panels (see pack.go).
func packTrans(dst, src []float32, ld, kb, w, n, ps int) {
	var tr func(dst, src *float32, ld, kb int)
	switch w {
	case 6:
		tr = transpose6
	case 12:
		tr = transpose12
	case 16:
		tr = transpose16
	case 32:
		tr = transpose32
	}
	if !asmPack && asmTrans16AVX2 && w == 16 && kb >= 8 && ld*4*w < 1<<31 {
		// The B panels of the forward linear layers (op(B) = Wᵀ) and of
		// the attention scores (Kᵀ) on AVX2 machines.
		kb8 := kb &^ 7
		q := 0
		for ; q+16 <= n; q += 16 {
			d, s := dst[q/16*ps:][:kb*16], src[q*ld:]
			_ = s[15*ld+kb-1]
			transpose16AVX2(&d[0], &s[0], ld, kb8)
			if kb8 < kb {
				transSteps(d, s, ld, kb8, kb, 16, 16)
			}
		}
		if q < n {
			transSteps(dst[q/16*ps:], src[q*ld:], ld, 0, kb, 16, n-q)
		}
		return
	}
	if !asmPack || tr == nil || kb < 16 || ld*4*w >= 1<<31 {
		packTransGo(dst, src, ld, kb, w, n, ps)
		return
	}
	kb16 := kb &^ 15
	q := 0
	for ; q+w <= n; q += w {
		d, s := dst[q/w*ps:][:kb*w], src[q*ld:]
		_ = s[(w-1)*ld+kb-1]
		tr(&d[0], &s[0], ld, kb16)
		if kb16 < kb {
			transSteps(d, s, ld, kb16, kb, w, w)
		}
	}
	if q < n {
		transSteps(dst[q/w*ps:], src[q*ld:], ld, 0, kb, w, n-q)
	}
}

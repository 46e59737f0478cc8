package gemm

// Packing copies a block of op(A) or op(B) into the contiguous, zero-padded
// micro-panel layout the kernels read (Goto & van de Geijn, "Anatomy of
// high-performance matrix multiplication", ACM TOMS 34(3), 2008, §4). The
// transposes and leading dimensions are absorbed here, so the kernels see a
// single layout: a micro-panel of width w is kb steps of w floats, and
// n rows or columns make ⌈n/w⌉ micro-panels, the last one zero-padded,
// starting every ps = panelStride(kb, w) floats.
//
// Both operands reduce to two primitives, for a source with row stride ld:
//
//	packCopy:  dst[q*ps+p*w+c] = src[p*ld+q*w+c]  (a step is a contiguous run)
//	packTrans: dst[q*ps+p*w+c] = src[(q*w+c)*ld+p] (a step is a strided column)

// panelStride is the distance between packed micro-panels: kb·w floats plus
// one cache line, so that the panels' starts do not all fall in the same L1
// set when kb·w·4 is a multiple of 4 KiB (packing writes to all of them at
// once).
func panelStride(kb, w int) int { return kb*w + 16 }

// packA packs rows [i0, i0+mb) and columns [p0, p0+kb) of op(A) into dst as
// micro-panels of width mr.
func packA(dst, a []float32, lda int, tA bool, i0, mb, p0, kb, mr int) {
	ps := panelStride(kb, mr)
	if tA { // op(A)[i][p] = a[p*lda+i]
		packCopy(dst, a[p0*lda+i0:], lda, kb, mr, mb, ps)
	} else { // op(A)[i][p] = a[i*lda+p]
		packTrans(dst, a[i0*lda+p0:], lda, kb, mr, mb, ps)
	}
}

// packB packs rows [p0, p0+kb) and columns [j0, j0+nb) of op(B) into dst as
// micro-panels of width nr.
func packB(dst, b []float32, ldb int, tB bool, p0, kb, j0, nb, nr int) {
	ps := panelStride(kb, nr)
	if tB { // op(B)[p][j] = b[j*ldb+p]
		packTrans(dst, b[j0*ldb+p0:], ldb, kb, nr, nb, ps)
	} else { // op(B)[p][j] = b[p*ldb+j]
		packCopy(dst, b[p0*ldb+j0:], ldb, kb, nr, nb, ps)
	}
}

// packCopyGo is packCopy in plain Go.
func packCopyGo(dst, src []float32, ld, kb, w, n, ps int) {
	for q := 0; q < n; q += w {
		d := dst[q/w*ps:][:kb*w]
		valid := min(w, n-q)
		for p := 0; p < kb; p++ {
			dp := d[p*w : p*w+w]
			copy(dp, src[p*ld+q:][:valid])
			clear(dp[valid:])
		}
	}
}

// packTransGo is packTrans in plain Go.
func packTransGo(dst, src []float32, ld, kb, w, n, ps int) {
	for q := 0; q < n; q += w {
		transSteps(dst[q/w*ps:], src[q*ld:], ld, 0, kb, w, min(w, n-q))
	}
}

// transSteps packs steps [p0, kb) of one micro-panel of width w from the
// first valid rows of src, zeroing the rest of each step.
func transSteps(d, src []float32, ld, p0, kb, w, valid int) {
	d = d[:kb*w]
	for r := 0; r < valid; r++ {
		for p, v := range src[r*ld+p0 : r*ld+kb] {
			d[(p0+p)*w+r] = v
		}
	}
	for r := valid; r < w; r++ {
		for p := p0; p < kb; p++ {
			d[p*w+r] = 0
		}
	}
}

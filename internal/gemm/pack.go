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

// packCopyGo is packCopy in plain Go. It walks the source a row (step) at
// a time, reading a run of each row (about 1 KiB, a group of panels) in
// order and scattering it to the panels: the panels' starts are ps apart, which panelStride keeps off
// one L1 set, whereas the source's rows are often a power of two apart
// (row strides of 128 or 512 floats), so that walking a panel at a time,
// down kb rows, would map every row to the same few L1 sets and miss on
// nearly every read (measured: a fifth of the ViT training step).
// Full panels of the AVX2 kernel's widths (6, 16) copy each step as one
// fixed-size array, which the compiler inlines as a few vector moves: a
// copy() of 6 or 16 floats is a call to memmove per step.
func packCopyGo(dst, src []float32, ld, kb, w, n, ps int) {
	full := n / w
	if full > 0 && (w == 6 || w == 16) {
		// Width 6 (a transposed A): groups of 42 panels, about 1 KiB of
		// each source row: whole rows as one group made too many write
		// streams when n is large (mc = 1024: 171 panels). Width 16 (B)
		// copies whole lines and measured fastest a whole row at a time.
		group := full
		if w == 6 {
			group = 42
		}
		for q0 := 0; q0 < full; q0 += group {
			q1 := min(q0+group, full)
			for p := 0; p < kb; p++ {
				row := src[p*ld:][:q1*w]
				d := dst[p*w:]
				if w == 16 {
					for q := q0; q < q1; q++ {
						// Through a local: a direct *dst = *src may overlap, so
						// the compiler would call memmove.
						v := *(*[16]float32)(row[q*16:])
						*(*[16]float32)(d[q*ps:]) = v
					}
					continue
				}
				for q := q0; q < q1; q++ {
					v := *(*[6]float32)(row[q*6:])
					*(*[6]float32)(d[q*ps:]) = v
				}
			}
		}
	} else {
		full = 0
	}
	for q := full * w; q < n; q += w {
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
	if valid == w && p0 < kb {
		switch w {
		case 6:
			trans6(d[p0*6:kb*6], src, ld, p0, kb)
			return
		case 16:
			trans16(d[p0*16:kb*16], src, ld, p0, kb)
			return
		}
	}
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

// trans6 packs steps [p0, kb) of a full micro-panel of width 6: d[p*6+r] =
// src[r*ld+p0+p]. The rows are resliced to one length so that the loop
// runs without bounds checks, writing each step as one array.
func trans6(d, src []float32, ld, p0, kb int) {
	r0 := src[p0:kb]
	n := len(r0)
	r1, r2, r3, r4, r5 := src[ld+p0:][:n], src[2*ld+p0:][:n], src[3*ld+p0:][:n], src[4*ld+p0:][:n], src[5*ld+p0:][:n]
	d = d[:n*6]
	for p := range r0 {
		*(*[6]float32)(d[p*6:]) = [6]float32{r0[p], r1[p], r2[p], r3[p], r4[p], r5[p]}
	}
}

// trans16 is trans6 for width 16.
func trans16(d, src []float32, ld, p0, kb int) {
	r0 := src[p0:kb]
	n := len(r0)
	r1, r2, r3, r4 := src[ld+p0:][:n], src[2*ld+p0:][:n], src[3*ld+p0:][:n], src[4*ld+p0:][:n]
	r5, r6, r7, r8 := src[5*ld+p0:][:n], src[6*ld+p0:][:n], src[7*ld+p0:][:n], src[8*ld+p0:][:n]
	r9, r10, r11, r12 := src[9*ld+p0:][:n], src[10*ld+p0:][:n], src[11*ld+p0:][:n], src[12*ld+p0:][:n]
	r13, r14, r15 := src[13*ld+p0:][:n], src[14*ld+p0:][:n], src[15*ld+p0:][:n]
	d = d[:n*16]
	for p := range r0 {
		*(*[16]float32)(d[p*16:]) = [16]float32{r0[p], r1[p], r2[p], r3[p], r4[p], r5[p], r6[p], r7[p],
			r8[p], r9[p], r10[p], r11[p], r12[p], r13[p], r14[p], r15[p]}
	}
}

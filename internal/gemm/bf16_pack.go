package gemm

// Packing with rounding: the bf16 products (SgemmBF16) pack their
// operands straight from float32, rounding each pair of consecutive k to
// one word of the micro-panel as it is packed (pack.go's layout, over
// steps of pairs), so that no rounded copy of a whole operand is made
// and read back. The driver (driver.go) blocks the product in words: a
// block of kb steps covers the floats [2·p0, 2·p0+2·kb) of k. An operand
// is one of two kinds, whichever its transpose makes it:
//
//   - k strided (op(A) = Aᵀ, op(B) = B): a step of a panel is a pair of
//     source rows, 2p and 2p+1, read along and interleaved (packPairs);
//   - k contiguous (op(A) = A, op(B) = Bᵀ): a panel is w source rows, each
//     rounded along k into a small staging block, which is then transposed
//     into the panel's steps (packRoundTrans).
//
// Either way each word is roundBF16 of the same two floats as the two-pass
// way's (a rounded word matrix, then packed as floats), and the panels are
// the same bits, so the products are bit for bit the same.

// stageSteps is how many steps of a panel packRoundTrans rounds into its
// staging block at a time: 32 rows of 128 words stay in L1.
const stageSteps = 128

// stageLD is the staging block's row stride in words (a cache line more
// than its rows, keeping them off one L1 set).
const stageLD = stageSteps + 16

// packBF16A packs rows [i0, i0+mb) and steps [p0, p0+kb) of op(A), a
// float32 matrix of depth jb.kf, into dst as rounded micro-panels of width mr.
func (jb *job) packBF16A(dst []float32, bufs *buffers, i0, mb, p0, kb int) {
	mr := jb.kern.mr
	ps := panelStride(kb, mr)
	if jb.tA { // op(A)[i][f] = a[f*lda+i]
		packPairs(dst, jb.a, jb.lda, jb.kf, p0, kb, i0, mb, mr, ps)
		return
	}
	packRoundTrans(dst, bufs, jb.a, jb.lda, jb.kf, i0, mb, p0, kb, mr, ps)
}

// packBF16B packs steps [p0, p0+kb) and columns [j0, j0+nb) of op(B) into
// dst as rounded micro-panels of width nr.
func (jb *job) packBF16B(dst []float32, bufs *buffers, p0, kb, j0, nb int) {
	nr := jb.kern.nr
	if jb.bWords {
		packB(dst, jb.b, jb.ldb, jb.tB, p0, kb, j0, nb, nr)
		return
	}
	ps := panelStride(kb, nr)
	if jb.tB { // op(B)[f][j] = b[j*ldb+f]
		packRoundTrans(dst, bufs, jb.b, jb.ldb, jb.kf, j0, nb, p0, kb, nr, ps)
		return
	}
	packPairs(dst, jb.b, jb.ldb, jb.kf, p0, kb, j0, nb, nr, ps)
}

// packPairs packs steps [p0, p0+kb) of columns [j0, j0+n) of src, a k×cols
// float32 matrix with row stride ld, into ⌈n/w⌉ micro-panels of width w,
// ps apart: word c of step p of panel q is pair(src[2(p0+p)][j0+q·w+c],
// src[2(p0+p)+1][j0+q·w+c]), the high half zero past an odd k, the words
// past n zero.
func packPairs(dst, src []float32, ld, k, p0, kb, j0, n, w, ps int) {
	full := kb // steps with both rows
	if 2*(p0+kb) > k {
		full--
	}
	if full > 0 {
		pairPanels(dst, src[2*p0*ld+j0:], ld, full, w, n, ps)
	}
	if full == kb {
		return
	}
	r0 := src[(k-1)*ld+j0:][:n] // an odd k's last row, paired with zeros
	dw := words(dst)
	for q := 0; q < n; q += w {
		valid := min(w, n-q)
		d := dw[q/w*ps+full*w:][:w]
		pairRows(d[:valid], r0[q:q+valid], nil)
		clear(d[valid:])
	}
}

// pairPanelsGo is pairPanels in Go: kb steps, both rows of each present.
func pairPanelsGo(dst, src []float32, ld, kb, w, n, ps int) {
	dw := words(dst)
	for q := 0; q < n; q += w {
		valid := min(w, n-q)
		d := dw[q/w*ps:][:kb*w]
		for p := 0; p < kb; p++ {
			r0 := src[2*p*ld+q:][:valid]
			r1 := src[(2*p+1)*ld+q:][:valid]
			dp := d[p*w : p*w+w]
			for c, v := range r0 {
				dp[c] = pairBF16(v, r1[c])
			}
			clear(dp[valid:])
		}
	}
}

// packRoundTrans packs steps [p0, p0+kb) of rows [i0, i0+n) of src, a
// rows×k float32 matrix with row stride ld (k contiguous), into ⌈n/w⌉
// micro-panels of width w, ps apart: word r of step p of panel q is
// pair(src[i0+q·w+r][2(p0+p)], src[i0+q·w+r][2(p0+p)+1]), the high half
// zero past an odd k, the words of rows past n zero. The rows of a panel
// are rounded, stageSteps words at a time, into bufs.stage (in L1), which
// packTrans then transposes into the panel (a partial panel's missing rows
// as zero rows of the stage, so that it takes the full panels' transpose).
func packRoundTrans(dst []float32, bufs *buffers, src []float32, ld, k, i0, n, p0, kb, w, ps int) {
	stage := aligned(&bufs.stage, w*stageLD)
	sw := words(stage)
	for q := 0; q < n; q += w {
		valid := min(w, n-q)
		panel := dst[q/w*ps:]
		for c0 := 0; c0 < kb; c0 += stageSteps {
			cn := min(stageSteps, kb-c0)
			f0 := 2 * (p0 + c0)
			f1 := min(f0+2*cn, k)
			for r := 0; r < valid; r++ {
				row := (i0 + q + r) * ld
				roundRow(sw[r*stageLD:][:cn], src[row+f0:row+f1])
			}
			for r := valid; r < w; r++ { // a partial panel's missing rows: zeros, transposed as a full panel's
				clear(sw[r*stageLD:][:cn])
			}
			packTrans(panel[c0*w:], stage, stageLD, cn, w, w, ps)
		}
	}
}

package gemm

import "unsafe"

// Blocking parameters (Goto & van de Geijn 2008), for 32 KiB L1d and 1 MiB
// L2 per core: a kc×nc block of packed B (512 KiB) stays in L2; each kc×mr
// micro-panel of packed A (12 KiB) stays in L1 while the block's kc×nr
// micro-panels stream past it; the mc×kc block of packed A (1 MiB) is read
// once per B block, from L2 or L3. Measured: kc ∈ [256, 512] and nc ∈ [512,
// 1024] are all within noise of each other on the model's shapes.
var (
	blockK = 256  // kc: depth of one rank-kc update
	blockN = 512  // nc: columns of B packed at a time (L2)
	blockM = 1024 // mc: rows of A packed at a time (L3)
)

// job is one product C = alpha·op(A)·op(B) + beta·C, with alpha ≠ 0 and k > 0.
type job struct {
	tA, tB        bool
	m, n, k       int
	alpha, beta   float32
	a, b, c       []float32
	lda, ldb, ldc int
	kern          *kernel
	// bias, when set (SgemmBias, with beta 1), is written into every row
	// of C before the first rank-kb update, tile by tile.
	bias []float32
	// bf16, when set (SgemmBF16), makes a and b float32 matrices of depth
	// kf that are rounded to bfloat16 pairs as they are packed
	// (bf16_pack.go); k is then the depth in pairs, ⌈kf/2⌉.
	bf16 bool
	kf   int
	// bWords says b already holds op(B)'s words (a bf16 job's B rounded
	// beforehand, runBF16), packed as floats.
	bWords bool
}

// buffers holds one goroutine's packing space (stage: the bf16 packing's
// staging block).
type buffers struct{ a, b, tile, stage []float32 }

// freeBufs keeps packing buffers between calls. Unlike a sync.Pool it is not
// emptied by the garbage collector, which the megabyte-sized buffers of large
// products would otherwise trigger on nearly every call.
var freeBufs = make(chan *buffers, 16)

func getBuffers() *buffers {
	select {
	case b := <-freeBufs:
		return b
	default:
		return new(buffers)
	}
}

func putBuffers(b *buffers) {
	select {
	case freeBufs <- b:
	default: // more goroutines than slots: let this one go
	}
}

// aligned returns a slice of n floats starting on a 64-byte boundary, reusing
// *s when it is large enough.
func aligned(s *[]float32, n int) []float32 {
	if cap(*s) < n+16 {
		*s = make([]float32, n+16)
	}
	buf := (*s)[:cap(*s)]
	off := int(uintptrOf(buf)/4) % 16
	if off != 0 {
		off = 16 - off
	}
	return buf[off : off+n]
}

// rowsA reports whether the product reads A in place through the kernel's
// rows variant instead of packing it: A untransposed (packing it is a
// transpose, the costliest pack) and a kernel that has the variant.
func (jb *job) rowsA() bool {
	if jb.lda > maxInPlaceLD {
		return false
	}
	if jb.tA {
		return jb.kern.cols != nil && useRows && useCols
	}
	return jb.kern.rows != nil && useRows
}

// maxInPlaceLD is the largest row stride of A (floats) read in place. The
// transposed kernel steps lda apart, one line and often one page per step:
// at lda = 2048 (GPT's 2048×256 products stored transposed) it measured
// 1.6–2.8× slower than packing; up to 512 (the ViT's 128–512-wide layers)
// it is faster. The same bound keeps the untransposed kernel's 6 rows off
// one L1 set (rows 4 KiB apart share it).
var maxInPlaceLD = 512

// useCols enables the in-place kernel for a transposed A.
var useCols = true

// useRows enables the in-place A kernels; tests clear it to check the
// packed path.
var useRows = true

// run computes the block of C with rows [i0, i1) and columns [j0, j1).
func (jb *job) run(i0, i1, j0, j1 int) {
	bufs := getBuffers()
	defer putBuffers(bufs)
	mr, nr := jb.kern.mr, jb.kern.nr
	kc := min(blockK, jb.k)
	mc := min(roundUp(blockM, mr), roundUp(i1-i0, mr))
	nc := min(roundUp(blockN, nr), roundUp(j1-j0, nr))
	direct := jb.rowsA()
	pa := aligned(&bufs.a, mc/mr*panelStride(kc, mr))
	pb := aligned(&bufs.b, nc/nr*panelStride(kc, nr))
	tile := aligned(&bufs.tile, mr*nr)
	for pc := 0; pc < jb.k; pc += kc {
		kb := min(kc, jb.k-pc)
		beta := jb.beta
		if pc > 0 {
			beta = 1
		}
		for ic := i0; ic < i1; ic += mc {
			mb := min(mc, i1-ic)
			full := 0 // rows of this block read in place
			switch {
			case jb.bf16:
				jb.packBF16A(pa, bufs, ic, mb, pc, kb)
			case direct:
				full = mb / mr * mr
				if full < mb { // the last, partial micro-panel is packed
					packA(pa, jb.a, jb.lda, jb.tA, ic+full, mb-full, pc, kb, mr)
				}
			default:
				packA(pa, jb.a, jb.lda, jb.tA, ic, mb, pc, kb, mr)
			}
			for jc := j0; jc < j1; jc += nc {
				nb := min(nc, j1-jc)
				if jb.bf16 {
					jb.packBF16B(pb, bufs, pc, kb, jc, nb)
				} else {
					packB(pb, jb.b, jb.ldb, jb.tB, pc, kb, jc, nb, nr)
				}
				var bias []float32
				if pc == 0 {
					bias = jb.bias
				}
				jb.macro(pa, pb, tile, ic, mb, jc, nb, pc, kb, full, beta, bias)
			}
		}
	}
}

// macro multiplies a kb×nb block of op(B), packed in pb, by the mb×kb block
// of op(A) at rows ic and columns pc, into C[ic:ic+mb, jc:jc+nb], one mr×nr
// tile per kernel call. The first full rows of the block are read in place
// by the kernel's rows variant; the rest are packed in pa, from its start.
// Edge tiles go through tile and are then added into C. A non-nil bias is
// first written into each tile's rows of C (columns jc+jr…), so that with
// beta 1 the tile becomes A·B + bias.
func (jb *job) macro(pa, pb, tile []float32, ic, mb, jc, nb, pc, kb, full int, beta float32, bias []float32) {
	kern, ldc, lda := jb.kern, jb.ldc, jb.lda
	mr, nr := kern.mr, kern.nr
	psA, psB := panelStride(kb, mr), panelStride(kb, nr)
	for ir := 0; ir < mb; ir += mr {
		rows := min(mr, mb-ir)
		inPlace := ir < full
		var a *float32
		fn := kern.rows
		if inPlace {
			if jb.tA {
				off := pc*lda + ic + ir
				_ = jb.a[off+(kb-1)*lda+mr-1] // the kernel reads up to here
				a, fn = &jb.a[off], kern.cols
			} else {
				off := (ic+ir)*lda + pc
				_ = jb.a[off+(mr-1)*lda+kb-1] // the kernel reads up to here
				a = &jb.a[off]
			}
		} else {
			a = &pa[(ir-full)/mr*psA]
		}
		for jr := 0; jr < nb; jr += nr {
			b := &pb[jr/nr*psB]
			cols := min(nr, nb-jr)
			off := (ic+ir)*ldc + jc + jr
			if rows == mr && cols == nr {
				_ = jb.c[off+(mr-1)*ldc+nr-1] // the kernel writes up to here
				if bias != nil {
					jb.fillBias(off, bias[jc+jr:][:nr], mr)
				}
				if inPlace {
					fn(kb, a, lda, b, &jb.c[off], ldc, jb.alpha, beta)
				} else {
					kern.fn(kb, a, b, &jb.c[off], ldc, jb.alpha, beta)
				}
				continue
			}
			if inPlace {
				fn(kb, a, lda, b, &tile[0], nr, jb.alpha, 0)
			} else {
				kern.fn(kb, a, b, &tile[0], nr, jb.alpha, 0)
			}
			for r := 0; r < rows; r++ {
				dst := jb.c[off+r*ldc:][:cols]
				src := tile[r*nr:][:cols]
				if bias != nil {
					for j, v := range src {
						dst[j] = v + bias[jc+jr+j]
					}
					continue
				}
				if beta == 0 {
					copy(dst, src)
					continue
				}
				for j, v := range src {
					dst[j] = v + beta*dst[j]
				}
			}
		}
	}
}

// fillBias writes bias (one tile's columns) into rows rows of C from off.
func (jb *job) fillBias(off int, bias []float32, rows int) {
	switch len(bias) { // the AVX2 and AVX-512 tiles: one array copy per row, no memmove call
	case 16:
		v := *(*[16]float32)(bias)
		for r := 0; r < rows; r++ {
			*(*[16]float32)(jb.c[off+r*jb.ldc:]) = v
		}
		return
	case 32:
		v := *(*[32]float32)(bias)
		for r := 0; r < rows; r++ {
			*(*[32]float32)(jb.c[off+r*jb.ldc:]) = v
		}
		return
	}
	for r := 0; r < rows; r++ {
		copy(jb.c[off+r*jb.ldc:][:len(bias)], bias)
	}
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

func uintptrOf(s []float32) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(s))) }

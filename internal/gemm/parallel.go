package gemm

import (
	"runtime"

	"github.com/d73a19ff/zoo/internal/parallel"
)

// Products smaller than these run on the calling goroutine.
var (
	smallWork = 100 // m·n·k at or below which the unpacked loop is used
	gemvRows  = 6   // m at or below which rows are vector-matrix products
	// parallelWork is the m·n·k per goroutine below which no more are
	// used: 1 M multiply-adds, about 10 µs on one core. It was 8 M while
	// each block started a goroutine, which on this project's VM waited
	// 50–100 µs for the second core to wake; parallel.Run's workers wait
	// hot, and the main job's 128×128 products gain 1.5–1.8× from the
	// split.
	parallelWork = 1 << 20
)

// parallel splits C into a grid of blocks, rows × columns, aligned to the
// kernel's tile, and computes them on up to GOMAXPROCS goroutines, the
// caller's included.
func (jb *job) parallel() {
	pr, pc := jb.split()
	if ks := jb.splitK(pr, pc); ks > 1 {
		jb.forkK(ks)
		return
	}
	if pr*pc <= 1 {
		jb.run(0, jb.m, 0, jb.n)
		return
	}
	jb.fork(pr, pc)
}

// packCost is the time to pack one float of A or B, in the time of one
// of the kernel's multiply-adds. It is chosen, not fitted: with it the
// model gives packing the 10–16% of the time that profiles of the main
// job's products and of the ViT step show.
const packCost = 16

// split returns the grid the product is shared out on: pr bands of rows
// times pc bands of columns of C, one goroutine each. Each goroutine packs
// its rows of op(A) and its columns of op(B), so the grid is the one whose
// largest block costs least, counting its tiles' multiply-adds and the
// packing of its bands: with many cores, row bands alone leave the
// products with few rows of tiles unbalanced (a 256×256 weight gradient
// is 22 rows of 12-row tiles: 16 goroutines would get one or two each,
// every one packing all of op(B)), and a wide op(B) under a few dozen rows
// (a beam search's 64 rows times a vocabulary) is shared out by columns.
// The number of goroutines is bounded by the work, parallelWork each.
func (jb *job) split() (pr, pc int) {
	workers := min(runtime.GOMAXPROCS(0), jb.m*jb.n*jb.k/parallelWork)
	if workers <= 1 {
		return 1, 1
	}
	um := (jb.m + jb.kern.mr - 1) / jb.kern.mr
	un := (jb.n + jb.kern.nr - 1) / jb.kern.nr
	pr, pc, best := 1, 1, -1
	for r := 1; r <= min(workers, um); r++ {
		c := min(workers/r, un)
		if cost := jb.gridCost(r, c); best < 0 || cost < best {
			pr, pc, best = r, c, cost
		}
	}
	return pr, pc
}

// gridCost is the modelled time of the largest block of a pr×pc grid, in
// multiply-adds: its tiles' work and the packing of its bands, over all of k.
func (jb *job) gridCost(pr, pc int) int {
	mr, nr := jb.kern.mr, jb.kern.nr
	um, un := (jb.m+mr-1)/mr, (jb.n+nr-1)/nr
	tm, tn := (um+pr-1)/pr, (un+pc-1)/pc
	return (tm*tn*mr*nr + packCost*(tm*mr+tn*nr)) * jb.k
}

// Splitting the depth (splitK): a product whose C is small and whose k is
// long (a weight gradient: 128×128 summed over the 6,400 positions of a
// ViT batch) is shared out by ranges of k, each goroutine computing all of
// C from its range into a buffer of its own, and the partial products are
// then summed into C. It is used only from splitMinWorkers goroutines on,
// so that on up to three every element of C is summed in the same order
// as by one goroutine (results do not change with GOMAXPROCS there);
// from four on, results can differ in the last bits between
// thread counts, as a BLAS's do.
var (
	splitMinWorkers = 4
	splitMinDepth   = 128     // the shortest range of k a goroutine takes
	splitMaxFloats  = 1 << 22 // the partial products' floats, all goroutines together
)

// splitK returns into how many ranges of k the product is shared out, or 1
// when the grid pr×pc is at least as fast by the cost model (the ranges'
// partial products cost a write and a read of C each). Like the grid, the
// ranges are bounded by the work, parallelWork each, so a C of one tile
// with a very long k is shared out too.
func (jb *job) splitK(pr, pc int) int {
	if forceSplitK > 0 && !jb.bf16 {
		return min(forceSplitK, jb.k)
	}
	if jb.bf16 {
		return 1
	}
	w := min(runtime.GOMAXPROCS(0), jb.k/splitMinDepth, splitMaxFloats/(jb.m*jb.n), jb.m*jb.n*jb.k/parallelWork)
	if w < splitMinWorkers {
		return 1
	}
	sub := *jb
	sub.k = (jb.k + w - 1) / w
	if sub.gridCost(1, 1)+2*jb.m*jb.n >= jb.gridCost(pr, pc) {
		return 1
	}
	return w
}

// forceSplitK, when positive, makes every blocked float32 product split
// its depth into that many ranges (at most k): tests set it.
var forceSplitK = 0

// splitBufs keeps the partial products' buffers between calls.
var splitBufs = make(chan *[]float32, 2)

// forkK computes C from w ranges of k, each into a partial product of its
// own on a goroutine of its own (the caller's included), then sums them
// into C with beta·C and the bias, sharing out the rows of C.
func (jb job) forkK(w int) {
	m, n := jb.m, jb.n
	var bp *[]float32
	select {
	case bp = <-splitBufs:
	default:
		bp = new([]float32)
	}
	defer func() {
		select {
		case splitBufs <- bp:
		default:
		}
	}()
	parts := aligned(bp, w*m*n)
	parallel.Run(w, func(i int) {
		k0, k1 := jb.k*i/w, jb.k*(i+1)/w
		sub := jb
		sub.k, sub.beta, sub.bias = k1-k0, 0, nil
		sub.c, sub.ldc = parts[i*m*n:][:m*n], n
		if jb.tA {
			sub.a = jb.a[k0*jb.lda:]
		} else {
			sub.a = jb.a[k0:]
		}
		if jb.tB {
			sub.b = jb.b[k0:]
		} else {
			sub.b = jb.b[k0*jb.ldb:]
		}
		sub.run(0, m, 0, n)
	})
	bands := min(w, m)
	parallel.Run(bands, func(i int) {
		for r := m * i / bands; r < m*(i+1)/bands; r++ {
			jb.sumRow(r, parts, w)
		}
	})
}

// sumRow writes row r of C from the w partial products (each m×n, packed
// in parts), beta·C and the bias: C is not read when beta is 0 or a bias
// is set (SgemmBias: C = op(A)·op(B) + bias).
func (jb *job) sumRow(r int, parts []float32, w int) {
	m, n := jb.m, jb.n
	dst := jb.c[r*jb.ldc:][:n]
	first := parts[r*n:][:n]
	switch {
	case jb.bias != nil:
		for j := range dst {
			dst[j] = jb.bias[j] + first[j]
		}
	case jb.beta == 0:
		copy(dst, first)
	default:
		for j := range dst {
			dst[j] = jb.beta*dst[j] + first[j]
		}
	}
	for i := 1; i < w; i++ {
		src := parts[i*m*n+r*n:][:n]
		for j := range dst {
			dst[j] += src[j]
		}
	}
}

// fork computes the blocks on the caller's goroutine and parallel's
// workers, whoever is free first taking the next block. It takes the job
// by value so that only forked calls move it to the heap. (Goroutines
// started per call, as it used, ran on the second core only after it had
// been woken, 50–100 µs on this VM: most of a 128-wide product's time.)
func (jb job) fork(pr, pc int) {
	mr, nr := jb.kern.mr, jb.kern.nr
	um, un := (jb.m+mr-1)/mr, (jb.n+nr-1)/nr
	parallel.Run(pr*pc, func(w int) {
		r, c := w/pc, w%pc
		i0, i1 := um*r/pr*mr, min(um*(r+1)/pr*mr, jb.m)
		j0, j1 := un*c/pc*nr, min(un*(c+1)/pc*nr, jb.n)
		jb.run(i0, i1, j0, j1)
	})
}

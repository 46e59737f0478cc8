package gemm

import (
	"runtime"
	"sync"
)

// Products smaller than these run on the calling goroutine.
var (
	smallWork    = 100     // m·n·k at or below which the unpacked loop is used
	gemvRows     = 6       // m at or below which rows are vector-matrix products
	parallelWork = 1 << 23 // m·n·k per goroutine below which no more are used
)

// parallel splits C into row bands (or column bands when C is short and
// wide), aligned to the kernel's tile, and computes them on up to GOMAXPROCS
// goroutines, the caller's included.
func (jb *job) parallel() {
	workers, byRows := jb.split()
	if workers <= 1 {
		jb.run(0, jb.m, 0, jb.n)
		return
	}
	jb.fork(workers, byRows)
}

// split returns how many goroutines compute the product and whether they
// share out rows (else columns) of C. Goroutines that share rows each pack
// all of op(B), so a wide B under a few dozen rows (a beam search's 64
// rows times a vocabulary) is shared out by columns, each goroutine
// packing its part of B.
func (jb *job) split() (workers int, byRows bool) {
	workers = min(runtime.GOMAXPROCS(0), jb.m*jb.n*jb.k/parallelWork)
	mr, nr := jb.kern.mr, jb.kern.nr
	byRows = jb.m >= jb.n || jb.m >= workers*16*mr
	units := (jb.m + mr - 1) / mr
	if !byRows {
		units = (jb.n + nr - 1) / nr
	}
	return max(1, min(workers, units)), byRows
}

// fork computes the bands on fresh goroutines and the last one on the
// caller's. It takes the job by value so that only forked calls move it to
// the heap. (Handing bands to long-lived workers over a channel avoided
// these few small allocations but measured erratic here: the woken worker
// often waited milliseconds for a processor.)
func (jb job) fork(workers int, byRows bool) {
	units, step, end := (jb.m+jb.kern.mr-1)/jb.kern.mr, jb.kern.mr, jb.m
	if !byRows {
		units, step, end = (jb.n+jb.kern.nr-1)/jb.kern.nr, jb.kern.nr, jb.n
	}
	var wg sync.WaitGroup
	wg.Add(workers - 1)
	for w := workers - 1; w >= 0; w-- {
		lo, hi := units*w/workers*step, min(units*(w+1)/workers*step, end)
		i0, i1, j0, j1 := 0, jb.m, lo, hi
		if byRows {
			i0, i1, j0, j1 = lo, hi, 0, jb.n
		}
		if w == 0 {
			jb.run(i0, i1, j0, j1)
			break
		}
		go func() {
			defer wg.Done()
			jb.run(i0, i1, j0, j1)
		}()
	}
	wg.Wait()
}

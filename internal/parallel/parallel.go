// Package parallel splits loops over the cores: the one helper the
// kernels, the decoding code and the layers share.
package parallel

import "runtime"

// MinWork is the smallest amount of work (in elements touched) worth a
// goroutine: below it the work runs on the calling goroutine.
const MinWork = 1 << 15

// For splits [0, n) into contiguous chunks, one per core at most, and runs
// f on each; cost is the work per index, in elements. Chunks never
// overlap, so f may write its own range of an output without locks.
func For(n, cost int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n*max(cost, 1)/MinWork)
	if workers <= 1 {
		f(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	Run((n+chunk-1)/chunk, func(w int) {
		f(w*chunk, min((w+1)*chunk, n))
	})
}

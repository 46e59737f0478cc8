package ops

import (
	"runtime"
	"sync"
)

// minWork is the smallest amount of work (in elements touched) worth a
// goroutine: below it the kernels run on the calling goroutine.
const minWork = 1 << 15

// parallelFor splits [0, n) into contiguous chunks, one per core, and runs f
// on each; cost is the work per index, in elements. Chunks never overlap,
// so f may write its own range of an output without locks.
func parallelFor(n, cost int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n*max(cost, 1)/minWork)
	if workers <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

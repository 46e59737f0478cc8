package parallel

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every index runs exactly once, whatever the number of indices, of
// processors and of callers at once, nested calls included, and whether
// the workers are hot or asleep.
func TestRunCoversOnce(t *testing.T) {
	defer spinTime.Store(spinTime.Load())
	for _, procs := range []int{1, 2, 4, 8} {
		for _, spin := range []time.Duration{0, 200 * time.Microsecond} {
			t.Run(fmt.Sprintf("procs%d_spin%v", procs, spin), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				spinTime.Store(int64(spin))
				var callers sync.WaitGroup
				for c := range 4 {
					callers.Add(1)
					go func() {
						defer callers.Done()
						for _, n := range []int{0, 1, 2, 3, 7, 64, 1000} {
							seen := make([]int32, n)
							Run(n, func(i int) {
								atomic.AddInt32(&seen[i], 1)
								if c == 0 && i%7 == 0 { // nested
									inner := make([]int32, 5)
									Run(5, func(j int) { atomic.AddInt32(&inner[j], 1) })
									for j, s := range inner {
										if s != 1 {
											t.Errorf("nested index %d ran %d times", j, s)
										}
									}
								}
							})
							for i, s := range seen {
								if s != 1 {
									t.Errorf("n %d: index %d ran %d times", n, i, s)
								}
							}
						}
					}()
				}
				callers.Wait()
			})
		}
	}
}

// The workers do share the work: with two processors, two pieces that
// each wait for the other to have started both run, which one goroutine
// alone could not do.
func TestRunUsesWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var started atomic.Int32
	deadline := time.Now().Add(5 * time.Second)
	Run(2, func(int) {
		started.Add(1)
		for started.Load() < 2 && time.Now().Before(deadline) {
			runtime.Gosched()
		}
	})
	require.EqualValues(t, 2, started.Load())
	require.True(t, time.Now().Before(deadline), "the second piece never ran beside the first")
	require.Nil(t, pool.cur.Load(), "the pool still holds the ended task's closure")
}

// BenchmarkRunHalves times two pieces of a given length (µs) run by Run
// and by a goroutine forked per call, with a gap of serial work a quarter
// of a piece between calls, as between a step's products:
//
//	GOMAXPROCS=2 go test ./internal/parallel -run '^$' -bench RunHalves
func BenchmarkRunHalves(b *testing.B) {
	for _, us := range []int{5, 20, 100} {
		piece := func() { busy(time.Duration(us) * time.Microsecond) }
		b.Run(fmt.Sprintf("piece%dus/serial", us), func(b *testing.B) {
			for b.Loop() {
				piece()
				piece()
				busy(time.Duration(us) * time.Microsecond / 4)
			}
		})
		b.Run(fmt.Sprintf("piece%dus/fork", us), func(b *testing.B) {
			for b.Loop() {
				var wg sync.WaitGroup
				wg.Add(1)
				go func() { defer wg.Done(); piece() }()
				piece()
				wg.Wait()
				busy(time.Duration(us) * time.Microsecond / 4)
			}
		})
		b.Run(fmt.Sprintf("piece%dus/run", us), func(b *testing.B) {
			for b.Loop() {
				Run(2, func(int) { piece() })
				busy(time.Duration(us) * time.Microsecond / 4)
			}
		})
	}
}

// busy spins on the processor for d.
func busy(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// A nested Run gives the pool back the task it displaced while that one
// still has indices to hand out, so that workers coming free join it.
func TestRunNestedRestoresOuter(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var after *task
	Run(10, func(i int) {
		if i != 0 {
			time.Sleep(2 * time.Millisecond) // keep the outer task open
			return
		}
		Run(2, func(int) {})
		after = pool.cur.Load()
	})
	require.NotNil(t, after, "the pool lost the outer task")
	require.EqualValues(t, 10, after.n)
	require.Nil(t, pool.cur.Load())
}

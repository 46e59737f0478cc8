package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"
)

// bandwidth is membw's JSON line.
type bandwidth struct {
	MembwGBs float64 `json:"membw_gbs"` // best pass, 10⁹ bytes read per second
	MiB      int     `json:"mib"`
	Threads  int     `json:"threads"`
	Passes   int     `json:"passes"`
}

func cmdMembw(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("membw", flag.ContinueOnError)
	mib := fs.Int("mib", 1024, "buffer size in MiB, far larger than the caches")
	threads := fs.Int("threads", 2, "goroutines reading at once")
	passes := fs.Int("passes", 5, "passes over the buffer; the best counts")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *mib < 1 || *threads < 1 || *passes < 1 {
		return fmt.Errorf("membw: want -mib, -threads and -passes ≥ 1")
	}
	gbs := readBandwidth(*mib<<20/8, *threads, *passes)
	b, err := json.Marshal(bandwidth{MembwGBs: gbs, MiB: *mib, Threads: *threads, Passes: *passes})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return nil
}

// readBandwidth is the best of passes reads of n uint64s by threads
// goroutines, each summing a contiguous part, in GB/s. The buffer is
// written once first so that its pages exist.
func readBandwidth(n, threads, passes int) float64 {
	x := make([]uint64, n)
	for i := range x {
		x[i] = uint64(i)
	}
	best := 0.0
	for range passes {
		start := time.Now()
		parallelSum(x, threads) // its goroutines' loads are what is timed
		if gbs := float64(8*n) / time.Since(start).Seconds() / 1e9; gbs > best {
			best = gbs
		}
	}
	return best
}

// parallelSum is the sum of x, split into parts contiguous pieces summed
// at once.
func parallelSum(x []uint64, parts int) uint64 {
	sums := make([]uint64, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[p] = sum8(x[p*len(x)/parts : (p+1)*len(x)/parts])
		}()
	}
	wg.Wait()
	var s uint64
	for _, v := range sums {
		s += v
	}
	return s
}

// sum8 sums x with 8 independent accumulators, so that the loads, not the
// adds' latency, bound it.
func sum8(x []uint64) uint64 {
	var a0, a1, a2, a3, a4, a5, a6, a7 uint64
	i := 0
	for ; i+8 <= len(x); i += 8 {
		y := x[i : i+8 : i+8]
		a0 += y[0]
		a1 += y[1]
		a2 += y[2]
		a3 += y[3]
		a4 += y[4]
		a5 += y[5]
		a6 += y[6]
		a7 += y[7]
	}
	for ; i < len(x); i++ {
		a0 += x[i]
	}
	return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7
}

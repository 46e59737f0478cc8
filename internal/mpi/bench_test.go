//go:build mpi

package mpi

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkAllreduce measures AllreduceFloat32 across the ranks of an
// mpirun job; run by itself it skips. Every rank must run the same
// iterations, so fix their number:
//
//	go test -tags mpi -c -o /tmp/mpi.test ./internal/mpi
//	mpirun -np 2 --allow-run-as-root --oversubscribe [--mca btl self,tcp] \
//	    /tmp/mpi.test -test.run='^$' -test.bench=Allreduce -test.benchtime=200x
//
// Each rank prints its own results. MB/s is the payload per rank
// (4·len(buf)) over the time per reduction, as Stats.ReducedBytes counts
// it.
func BenchmarkAllreduce(b *testing.B) {
	if comm.Size() == 1 {
		b.Skip("one rank: run the test binary under mpirun -np 2 (see the comment)")
	}
	defer comm.SetTimeout(comm.Timeout())
	comm.SetTimeout(time.Minute) // a rank that disagrees ends the run in a minute
	for _, n := range []int{1, 8 << 20} {
		b.Run(sizeName(4*n), func(b *testing.B) {
			ns, err := comm.AllgatherInt64(int64(b.N))
			if err != nil {
				b.Fatal(err)
			}
			for _, n := range ns {
				if n != int64(b.N) {
					b.Fatalf("the ranks run %v iterations: use -test.benchtime=Nx", ns)
				}
			}
			buf := make([]float32, n)
			b.ReportAllocs()
			if err := comm.Barrier(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := comm.AllreduceFloat32(buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(4*n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "MB/s")
		})
	}
}

// BenchmarkIallreduceOverlap measures how much of a 32 MB
// IallreduceFloat32 is left for Wait after 50 ms of computation (a busy
// loop standing in for backward), when the computation calls Test after
// every millisecond and when it does not. Run it as BenchmarkAllreduce,
// with -test.bench=IallreduceOverlap -test.benchtime=5x.
func BenchmarkIallreduceOverlap(b *testing.B) {
	if comm.Size() == 1 {
		b.Skip("one rank: run the test binary under mpirun -np 2 (see BenchmarkAllreduce)")
	}
	buf := make([]float32, 8<<20)
	for _, progress := range []bool{false, true} {
		b.Run(map[bool]string{false: "wait-only", true: "test-each-ms"}[progress], func(b *testing.B) {
			if err := comm.Barrier(); err != nil {
				b.Fatal(err)
			}
			var waited time.Duration
			for range b.N {
				r, err := comm.IallreduceFloat32(buf)
				if err != nil {
					b.Fatal(err)
				}
				for range 50 {
					for end := time.Now().Add(time.Millisecond); time.Now().Before(end); {
					}
					if progress {
						if _, err := r.Test(); err != nil {
							b.Fatal(err)
						}
					}
				}
				start := time.Now()
				if err := r.Wait(); err != nil {
					b.Fatal(err)
				}
				waited += time.Since(start)
			}
			b.ReportMetric(waited.Seconds()*1e3/float64(b.N), "ms-in-Wait/op")
		})
	}
}

// sizeName is 4B, 32MB.
func sizeName(bytes int) string {
	switch {
	case bytes >= 1<<20:
		return fmt.Sprintf("%dMB", bytes>>20)
	case bytes >= 1<<10:
		return fmt.Sprintf("%dKB", bytes>>10)
	}
	return fmt.Sprintf("%dB", bytes)
}

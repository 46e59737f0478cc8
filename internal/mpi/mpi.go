// Package mpi is a thin wrapper over Open MPI's C API for data-parallel
// training: in-place sum reductions of gradients, broadcasts of the
// initial weights, and a few small collectives for checks.
//
// Built with -tags mpi it calls Open MPI through cgo (needs
// libopenmpi-dev; run the program under mpirun). Without the tag it is a
// single-process stand-in with the same API: Size is 1, Rank is 0 and the
// reductions leave their buffers as they are, so callers need no build
// tags. A plain build launched by mpirun with more than one rank refuses
// to start (see Init) rather than train the same model N times.
//
// Every collective is MPI's non-blocking form followed by a poll of
// MPI_Test with a deadline (Comm.SetTimeout), so a rank whose peer died or
// hangs gets a *TimeoutError instead of waiting forever. MPI errors come
// back as Go errors (the communicator has MPI_ERRORS_RETURN).
//
// Collectives must be called in the same order, with the same lengths, on
// every rank; that is MPI's rule, and the reason to call them from one
// goroutine. The methods are safe for concurrent use (see Init for the
// threading), but two goroutines racing to start collectives may start
// them in different orders on different ranks.
//
// Observed with Open MPI 4.1.4: when a rank dies (exits with any status
// without Finalize, or is killed), mpirun kills the others about a second
// later and says which rank died and how, so the timeout is for ranks
// that hang, and for launchers that let the others run (mpirun --mca
// orte_abort_on_non_zero_status 0). For long buffers, Open MPI's default
// algorithm for non-blocking sums is slow: Init picks Rabenseifner's
// (OMPI_MCA_coll_libnbc_iallreduce_algorithm=3, unless the environment
// sets another), with which a 32 MB sum over two ranks ran up to 2.7
// times as fast here, over TCP most.
package mpi

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// DefaultTimeout is how long a collective waits for its peers before
// returning a *TimeoutError, until Comm.SetTimeout changes it. It is long
// enough for a slow rank to finish a step, a checkpoint or an evaluation.
const DefaultTimeout = 5 * time.Minute

// maxCount is the most elements one MPI call is given: MPI's counts are C
// ints, so a longer buffer is reduced or broadcast in chunks of maxCount.
// A variable so that the tests can exercise the chunking on small buffers.
var maxCount = 1 << 30

// Comm is the communicator of all the ranks of the job (a duplicate of
// MPI_COMM_WORLD, so that this package's messages never match anyone
// else's). Get it from Init.
type Comm struct {
	rank, size int
	timeout    atomic.Int64 // a time.Duration; 0 is none

	// mu serialises the calls into MPI (MPI_THREAD_SERIALIZED; see
	// Init). It is held only for the duration of one non-blocking call,
	// never while waiting.
	mu        sync.Mutex
	w         *world
	broken    error // the first timeout; MPI still owns its buffer
	pending   int   // requests started and not yet complete
	finalized bool

	stats struct {
		sync.Mutex
		Stats
	}
}

// Stats are a Comm's cumulative counters, for measuring how much of a
// step is communication.
type Stats struct {
	// Reductions counts AllreduceFloat32, AllreduceFloat64 and
	// IallreduceFloat32 calls, one per call however many MPI calls a
	// long buffer needed.
	Reductions int64
	// ReducedBytes is the payload those reductions summed, per rank:
	// 4·len(buf) for float32. What crosses the wire depends on MPI's
	// algorithm; for a ring it is about twice this.
	ReducedBytes int64
	// Collectives counts every collective: reductions, broadcasts,
	// barriers and gathers.
	Collectives int64
	// Wait is the time spent waiting for collectives to complete: the
	// whole call for the blocking ones, the time inside Wait for
	// IallreduceFloat32. Time a non-blocking reduction spends in flight
	// while the caller computes is not counted.
	Wait time.Duration
}

// TimeoutError is the error of a collective that did not complete within
// the Comm's timeout: usually another rank died or hangs. The Comm cannot
// be used after it (MPI still owns the buffer); call Abort.
type TimeoutError struct {
	Op      string        // the collective, e.g. "AllreduceFloat32"
	Rank    int           // the rank that timed out
	Size    int           // the number of ranks
	Elapsed time.Duration // how long it waited
}

// Error names the collective, the rank, the number of ranks and the time
// waited, and says what to look at.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("mpi: %s on rank %d of %d did not complete after %v: "+
		"another rank probably died or hangs; see its output (or raise the timeout if a rank is just slow)",
		e.Op, e.Rank, e.Size, e.Elapsed.Round(time.Millisecond))
}

// errFinalized is returned by calls after Finalize.
var errFinalized = errors.New("mpi: the communicator is finalized")

// Rank is this process's rank, in [0, Size).
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks in the job; 1 without -tags mpi.
func (c *Comm) Size() int { return c.size }

// SetTimeout sets how long each collective waits for completion before
// returning a *TimeoutError; 0 waits forever. The default is
// DefaultTimeout.
func (c *Comm) SetTimeout(d time.Duration) { c.timeout.Store(int64(max(d, 0))) }

// Timeout is the current timeout of each collective; 0 is none.
func (c *Comm) Timeout() time.Duration { return time.Duration(c.timeout.Load()) }

// Stats returns the cumulative counters since Init.
func (c *Comm) Stats() Stats {
	c.stats.Lock()
	defer c.stats.Unlock()
	return c.stats.Stats
}

// Request is a collective in flight, from IallreduceFloat32. Its buffer
// belongs to MPI until Wait (or Test) says it completed without error:
// do not read or write it. One goroutine at a time may use a Request.
type Request struct {
	c       *Comm
	op      string
	handles []handle // one per MPI call: a long buffer is several chunks
	pinner  runtime.Pinner
	done    bool
	err     error
}

// Wait blocks until the collective has completed on this rank, or the
// Comm's timeout has passed since Wait was called (a *TimeoutError).
// Calling Wait again returns the same result.
func (r *Request) Wait() error {
	if r.done {
		return r.err
	}
	c := r.c
	start := time.Now()
	err := r.poll(start)
	c.stats.Lock()
	c.stats.Wait += time.Since(start)
	c.stats.Unlock()
	r.finish(err)
	return err
}

// Test reports whether the collective has completed, without waiting;
// if it has, with its error, as Wait would return it. Open MPI has no
// progress thread: a non-blocking collective moves only while its ranks
// are inside MPI calls. So a caller that overlaps reductions with
// computation should call Test on its requests in flight now and then
// (say after each layer's backward): a call on one that is not done
// moves every collective in flight, not only its own. Measured with two ranks on two busy cores
// (BenchmarkIallreduceOverlap), a 32 MB sum (about 100 ms by itself)
// started before 50 ms of computation still needed 40-100 ms in Wait
// without such calls, and 6-8 ms with a Test every millisecond.
func (r *Request) Test() (bool, error) {
	if r.done {
		return true, r.err
	}
	done, err := r.test()
	if done || err != nil {
		r.finish(err)
		return true, err
	}
	return false, nil
}

// finish records the end of r: its buffer is the caller's again, unless
// err says MPI may still write to it.
func (r *Request) finish(err error) {
	c := r.c
	c.mu.Lock()
	if err != nil {
		// After a timeout (or an MPI error mid-flight) MPI still owns the
		// buffer and may write to it at any time: keep it pinned for
		// ever, and refuse further collectives.
		if c.broken == nil {
			c.broken = err
		}
	} else {
		r.pinner.Unpin()
		c.pending--
	}
	c.mu.Unlock()
	r.done, r.err = true, err
}

// Polling: MPI_Test in a tight loop for spinFor, then sleeps growing from
// minSleep to maxSleep, so that a rank waiting seconds for a slow peer
// does not burn a core. (Go's time.Sleep of under a millisecond often
// lasts a millisecond: spinning for less than spinFor made a 4-byte
// reduction take 100 µs instead of 4; over TCP a sum of megabytes moves
// only while tested, and a 3.3 MB gradient over a 1 Gbit/s link took
// 39 ms with 1 ms of spinning, 32 ms with 50, against 26 ms on the wire.
// A rank has nothing else to do while it waits.) A test that itself took longer
// than busyTest did work, a copy or a step of the reduction, so the
// collective is moving: polling spins again for respin. Open MPI moves a
// non-blocking collective only inside MPI calls, on every rank; a 32 MB
// sum over shared memory takes about a thousand tests.
const (
	spinFor  = 20 * time.Millisecond
	respin   = 100 * time.Microsecond
	minSleep = 50 * time.Microsecond
	maxSleep = time.Millisecond
	busyTest = 20 * time.Microsecond
)

// poll tests r's handles until all are complete, an MPI error, or the
// timeout since start.
func (r *Request) poll(start time.Time) error {
	c := r.c
	timeout := c.Timeout()
	spinUntil := start.Add(spinFor)
	sleep := minSleep
	for {
		t0 := time.Now()
		done, err := r.test()
		if err != nil || done {
			return err
		}
		now := time.Now()
		if timeout > 0 && now.Sub(start) >= timeout {
			return &TimeoutError{Op: r.op, Rank: c.rank, Size: c.size, Elapsed: now.Sub(start)}
		}
		if now.Sub(t0) > busyTest {
			spinUntil, sleep = now.Add(respin), minSleep
		}
		if now.Before(spinUntil) {
			continue
		}
		if timeout > 0 {
			sleep = min(sleep, start.Add(timeout).Sub(now))
		}
		time.Sleep(sleep)
		sleep = min(2*sleep, maxSleep)
	}
}

// test makes one pass of MPI_Test over the handles not yet complete and
// reports whether all are.
func (r *Request) test() (bool, error) {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finalized {
		return false, fmt.Errorf("mpi: %s: %w", r.op, errFinalized)
	}
	for i := range r.handles {
		if r.handles[i].done() {
			continue
		}
		ok, err := c.w.test(&r.handles[i])
		if err != nil {
			return false, fmt.Errorf("mpi: %s: %w", r.op, err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// dtype is the element type of a buffer handed to MPI.
type dtype int

const (
	float32T dtype = iota
	float64T
	byteT
)

func (dt dtype) size() int {
	switch dt {
	case float32T:
		return 4
	case float64T:
		return 8
	}
	return 1
}

// start begins the collective op over n elements, in chunks of at most
// maxCount: launch is called, under c.mu, for each chunk with its offset
// and length. The objects in pins (what MPI will read or write) stay
// pinned until the request completes. n == 0 gives a completed request.
func (c *Comm) start(op string, n int, pins []unsafe.Pointer, launch func(off, n int, h *handle) error) (*Request, error) {
	r := &Request{c: c, op: op}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(op); err != nil {
		return nil, err
	}
	if n > 0 {
		for _, p := range pins {
			r.pinner.Pin(p)
		}
		r.handles = make([]handle, 0, (n+maxCount-1)/maxCount)
		for off := 0; off < n; off += maxCount {
			r.handles = append(r.handles, handle{})
			if err := launch(off, min(n-off, maxCount), &r.handles[len(r.handles)-1]); err != nil {
				err = fmt.Errorf("mpi: %s: %w", op, err)
				if off > 0 {
					// The chunks already started cannot be cancelled (MPI
					// has no cancel for collectives): as after a timeout,
					// MPI owns the buffer and the Comm is unusable.
					c.broken = err
				} else {
					r.pinner.Unpin()
				}
				return nil, err
			}
		}
		c.pending++
	} else {
		r.done = true
	}
	c.stats.Lock()
	c.stats.Collectives++
	c.stats.Unlock()
	return r, nil
}

// usable reports why op cannot start, if it cannot. Called under c.mu.
func (c *Comm) usable(op string) error {
	if c.finalized {
		return fmt.Errorf("mpi: %s: %w", op, errFinalized)
	}
	if c.broken != nil {
		return fmt.Errorf("mpi: %s: the communicator is unusable after an earlier error (%w)", op, c.broken)
	}
	return nil
}

// buffer starts a collective over the n elements of type dt at p: launch
// gets each chunk's address and length.
func (c *Comm) buffer(op string, p unsafe.Pointer, n int, dt dtype, launch func(p unsafe.Pointer, n int, h *handle) error) (*Request, error) {
	return c.start(op, n, []unsafe.Pointer{p}, func(off, n int, h *handle) error {
		return launch(unsafe.Add(p, off*dt.size()), n, h)
	})
}

// reduce starts an in-place sum over the n elements at p and counts it.
func (c *Comm) reduce(op string, p unsafe.Pointer, n int, dt dtype) (*Request, error) {
	r, err := c.buffer(op, p, n, dt, func(p unsafe.Pointer, n int, h *handle) error {
		return c.w.iallreduce(p, n, dt, h)
	})
	if err != nil {
		return nil, err
	}
	c.stats.Lock()
	c.stats.Reductions++
	c.stats.ReducedBytes += int64(n * dt.size())
	c.stats.Unlock()
	return r, nil
}

// IallreduceFloat32 starts replacing buf, on every rank, with the
// elementwise sum of buf over all ranks, and returns at once: for summing
// one bucket of gradients while backward computes the next. buf belongs
// to MPI until the Request's Wait returns nil; see Request.Test for
// moving it along meanwhile. Every rank must pass a buffer of the same
// length, and start its reductions in the same order.
func (c *Comm) IallreduceFloat32(buf []float32) (*Request, error) {
	return c.reduce("IallreduceFloat32", unsafe.Pointer(unsafe.SliceData(buf)), len(buf), float32T)
}

// AllreduceFloat32 replaces buf, on every rank, with the elementwise sum
// of buf over all ranks. Every rank must pass a buffer of the same length.
func (c *Comm) AllreduceFloat32(buf []float32) error {
	return wait(c.reduce("AllreduceFloat32", unsafe.Pointer(unsafe.SliceData(buf)), len(buf), float32T))
}

// AllreduceFloat64 is AllreduceFloat32 for float64.
func (c *Comm) AllreduceFloat64(buf []float64) error {
	return wait(c.reduce("AllreduceFloat64", unsafe.Pointer(unsafe.SliceData(buf)), len(buf), float64T))
}

// BcastBytes copies buf from rank root to every other rank's buf. Every
// rank must pass a buffer of the same length.
func (c *Comm) BcastBytes(buf []byte, root int) error {
	return c.bcast("BcastBytes", unsafe.Pointer(unsafe.SliceData(buf)), len(buf), byteT, root)
}

// BcastFloat32 copies buf from rank root to every other rank's buf, e.g.
// the initial weights. Every rank must pass a buffer of the same length.
func (c *Comm) BcastFloat32(buf []float32, root int) error {
	return c.bcast("BcastFloat32", unsafe.Pointer(unsafe.SliceData(buf)), len(buf), float32T, root)
}

func (c *Comm) bcast(op string, p unsafe.Pointer, n int, dt dtype, root int) error {
	if root < 0 || root >= c.size {
		return fmt.Errorf("mpi: %s: root %d is not a rank of %d", op, root, c.size)
	}
	return wait(c.buffer(op, p, n, dt, func(p unsafe.Pointer, n int, h *handle) error {
		return c.w.ibcast(p, n, dt, root, h)
	}))
}

// Barrier returns once every rank has called it.
func (c *Comm) Barrier() error { return c.barrier("Barrier") }

func (c *Comm) barrier(op string) error {
	return wait(c.start(op, 1, nil, func(_, _ int, h *handle) error {
		return c.w.ibarrier(h)
	}))
}

// AllgatherInt64 returns every rank's v, indexed by rank (length Size):
// for comparing checksums or counts across ranks.
func (c *Comm) AllgatherInt64(v int64) ([]int64, error) {
	send := &v
	all := make([]int64, c.size)
	pins := []unsafe.Pointer{unsafe.Pointer(send), unsafe.Pointer(&all[0])}
	err := wait(c.start("AllgatherInt64", 1, pins, func(_, _ int, h *handle) error {
		return c.w.iallgatherInt64(send, all, h)
	}))
	if err != nil {
		return nil, err
	}
	return all, nil
}

func wait(r *Request, err error) error {
	if err != nil {
		return err
	}
	return r.Wait()
}

// Finalize waits (up to the timeout) for every rank to reach it, then
// shuts MPI down; no call may follow it. After a *TimeoutError it returns
// that error without calling MPI_Finalize, which would wait for the dead
// rank for ever: call Abort instead.
func (c *Comm) Finalize() error {
	c.mu.Lock()
	err := c.usable("Finalize")
	if err == nil && c.pending > 0 {
		err = fmt.Errorf("mpi: Finalize: %d requests were never waited for", c.pending)
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	// A barrier with a deadline first: MPI_Finalize synchronises the ranks
	// too, but without a timeout.
	if err := c.barrier("Finalize"); err != nil {
		return err
	}
	c.mu.Lock()
	c.finalized = true
	w := c.w
	c.mu.Unlock()
	start := time.Now()
	errc := w.finalize()
	if timeout := c.Timeout(); timeout > 0 {
		select {
		case err = <-errc:
		case <-time.After(timeout):
			return &TimeoutError{Op: "Finalize", Rank: c.rank, Size: c.size, Elapsed: time.Since(start)}
		}
	} else {
		err = <-errc
	}
	if err != nil {
		return fmt.Errorf("mpi: Finalize: %w", err)
	}
	return nil
}

// Abort ends every rank of the job with exit code code (MPI_Abort, or
// os.Exit without -tags mpi, or after Finalize); it does not return. It
// is the way out after a *TimeoutError.
func (c *Comm) Abort(code int) {
	c.mu.Lock() // held for ever: nothing may call MPI after this
	if c.finalized {
		os.Exit(code)
	}
	c.w.abort(code)
}

// initOnce guards Init: MPI can be initialised once per process.
var initOnce struct {
	sync.Mutex
	done bool
}

// Init starts MPI and returns the communicator of all ranks, with the
// timeout DefaultTimeout. It may be called once per process (MPI cannot
// be initialised again, even after Finalize).
//
// Threading: Go moves goroutines between OS threads, and MPI cares about
// threads. Init asks for MPI_THREAD_SERIALIZED: any thread may call MPI,
// one at a time. Each call holds the Comm's mutex, whose lock and unlock
// order the calls and their memory across threads, so the caller may be
// any goroutine on any thread, and a Go program needs no
// runtime.LockOSThread of its own. MPI_THREAD_FUNNELED would instead
// route every call to one locked thread, a switch of threads per call
// (20-50 µs measured here, against 4 µs for a whole 4-byte sum); and
// MPI_THREAD_MULTIPLE makes Open MPI lock internally, which the mutex
// already does. The exception is MPI_Init_thread and MPI_Finalize, which
// MPI wants on the same thread: they run on one goroutine locked to its
// thread, which waits between the two.
//
// Without -tags mpi, Init returns a Comm of size 1, or an error if the
// process was launched by mpirun (or another MPI launcher) as one of
// several ranks.
func Init() (*Comm, error) {
	initOnce.Lock()
	defer initOnce.Unlock()
	if initOnce.done {
		return nil, errors.New("mpi: Init was already called; MPI can be initialised once per process")
	}
	w, rank, size, err := initWorld()
	if err != nil {
		return nil, err
	}
	initOnce.done = true
	c := &Comm{rank: rank, size: size, w: w}
	c.SetTimeout(DefaultTimeout)
	return c, nil
}

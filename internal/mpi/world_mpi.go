//go:build mpi

package mpi

/*
#cgo pkg-config: ompi-c
#include <stdint.h>
#include <stdlib.h>
#include <mpi.h>

// Wrappers, because cgo cannot use Open MPI's handles and MPI_IN_PLACE,
// which are macros that cast addresses.

static MPI_Datatype zoo_type(int dt) {
	switch (dt) {
	case 0: return MPI_FLOAT;
	case 1: return MPI_DOUBLE;
	default: return MPI_BYTE;
	}
}

// zoo_init starts MPI and makes *comm a duplicate of MPI_COMM_WORLD with
// MPI_ERRORS_RETURN (MPI_Comm_dup copies the error handler).
static int zoo_init(int required, int *provided, MPI_Comm *comm, int *rank, int *size) {
	int err = MPI_Init_thread(NULL, NULL, required, provided);
	if (err != MPI_SUCCESS) return err;
	if ((err = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)) != MPI_SUCCESS) return err;
	if ((err = MPI_Comm_dup(MPI_COMM_WORLD, comm)) != MPI_SUCCESS) return err;
	if ((err = MPI_Comm_rank(*comm, rank)) != MPI_SUCCESS) return err;
	return MPI_Comm_size(*comm, size);
}

static int zoo_finalize(MPI_Comm comm) {
	int err = MPI_Comm_free(&comm);
	if (err != MPI_SUCCESS) return err;
	return MPI_Finalize();
}

static int zoo_iallreduce(void *buf, int n, int dt, MPI_Comm comm, MPI_Request *req) {
	return MPI_Iallreduce(MPI_IN_PLACE, buf, n, zoo_type(dt), MPI_SUM, comm, req);
}

static int zoo_ibcast(void *buf, int n, int dt, int root, MPI_Comm comm, MPI_Request *req) {
	return MPI_Ibcast(buf, n, zoo_type(dt), root, comm, req);
}

static int zoo_iallgather_int64(int64_t *send, int64_t *recv, MPI_Comm comm, MPI_Request *req) {
	return MPI_Iallgather(send, 1, MPI_INT64_T, recv, 1, MPI_INT64_T, comm, req);
}

static int zoo_test(MPI_Request *req, int *flag) {
	return MPI_Test(req, flag, MPI_STATUS_IGNORE);
}

static int zoo_error_string(int code, char *buf) {
	int n = 0;
	if (MPI_Error_string(code, buf, &n) != MPI_SUCCESS) n = 0;
	return n;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"unsafe"
)

// world is Open MPI's side of a Comm.
type world struct {
	comm C.MPI_Comm
	// calls runs functions on the goroutine that called MPI_Init_thread,
	// locked to its OS thread: MPI_Finalize must run on that thread.
	calls chan func()
}

// handle is one MPI request; done once MPI_Test said so.
type handle struct {
	req  C.MPI_Request
	flag C.int // MPI_Test's; here rather than on the stack, which cgo would move to the heap
	fin  bool
}

func (h *handle) done() bool { return h.fin }

// mpiError turns an MPI error code into an error with MPI_Error_string's
// text.
func mpiError(call string, code C.int) error {
	if code == C.MPI_SUCCESS {
		return nil
	}
	buf := (*C.char)(C.malloc(C.MPI_MAX_ERROR_STRING))
	defer C.free(unsafe.Pointer(buf))
	n := C.zoo_error_string(code, buf)
	if n == 0 {
		return fmt.Errorf("%s failed with MPI error %d", call, int(code))
	}
	return fmt.Errorf("%s: %s", call, C.GoStringN(buf, n))
}

// errNoOrted is Init's error when MPI_Init_thread would fail to start:
// outside a launcher Open MPI runs as a singleton, which starts Open MPI's
// daemon, orted, from PATH, and aborts the process if there is none.
var errNoOrted = errors.New("mpi: Init: not started by mpirun, and Open MPI needs its orted on PATH to run a single process (apt-get install openmpi-bin)")

func initWorld() (*world, int, int, error) {
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" && os.Getenv("PMIX_RANK") == "" {
		if _, err := exec.LookPath("orted"); err != nil {
			return nil, 0, 0, errNoOrted
		}
	}
	// Open MPI's default algorithm for non-blocking sums (libnbc's) sends
	// the whole buffer at every step; Rabenseifner's (reduce-scatter, then
	// allgather) sends it once: a 3.3 MB gradient over a 1 Gbit/s link in
	// 39 ms instead of 66 (26 ms on the wire). Open MPI reads OMPI_MCA_*
	// from the environment at MPI_Init; a user's own setting is kept.
	if os.Getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm") == "" {
		os.Setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3")
	}
	// Open MPI installs backtrace handlers for SIGABRT, SIGBUS, SIGFPE
	// and SIGSEGV (its opal_signal parameter), but only where the handler
	// is still SIG_DFL; the Go runtime has installed its own by now, so
	// a nil dereference is still a Go panic (TestPanicAfterInit).
	w := &world{calls: make(chan func())}
	type result struct {
		rank, size int
		err        error
	}
	res := make(chan result, 1)
	go func() {
		// MPI's main thread: never unlocked, so no other goroutine runs
		// on it, and it lives until Finalize (or exits with Init's error).
		runtime.LockOSThread()
		var provided, rank, size C.int
		code := C.zoo_init(C.MPI_THREAD_SERIALIZED, &provided, &w.comm, &rank, &size)
		if err := mpiError("MPI_Init_thread", code); err != nil {
			res <- result{err: err}
			return
		}
		if provided < C.MPI_THREAD_SERIALIZED {
			res <- result{err: fmt.Errorf("MPI_Init_thread provides thread level %d, below MPI_THREAD_SERIALIZED (%d)",
				int(provided), int(C.MPI_THREAD_SERIALIZED))}
			return
		}
		res <- result{rank: int(rank), size: int(size)}
		for f := range w.calls {
			f()
		}
	}()
	// MPI_Init_thread waits for every rank to start; a launcher that
	// fails to start one kills the job, so no timeout here.
	r := <-res
	if r.err != nil {
		return nil, 0, 0, fmt.Errorf("mpi: Init: %w", r.err)
	}
	return w, r.rank, r.size, nil
}

// finalize runs MPI_Finalize on MPI's main thread; the channel gets its
// result.
func (w *world) finalize() <-chan error {
	errc := make(chan error, 1)
	w.calls <- func() {
		errc <- mpiError("MPI_Finalize", C.zoo_finalize(w.comm))
		close(w.calls) // the goroutine ends, and its thread with it
	}
	return errc
}

func (w *world) abort(code int) {
	C.MPI_Abort(w.comm, C.int(code))
	os.Exit(code) // MPI_Abort does not return; this is in case it does
}

func (w *world) iallreduce(p unsafe.Pointer, n int, dt dtype, h *handle) error {
	return mpiError("MPI_Iallreduce", C.zoo_iallreduce(p, C.int(n), C.int(dt), w.comm, &h.req))
}

func (w *world) ibcast(p unsafe.Pointer, n int, dt dtype, root int, h *handle) error {
	return mpiError("MPI_Ibcast", C.zoo_ibcast(p, C.int(n), C.int(dt), C.int(root), w.comm, &h.req))
}

func (w *world) ibarrier(h *handle) error {
	return mpiError("MPI_Ibarrier", C.MPI_Ibarrier(w.comm, &h.req))
}

func (w *world) iallgatherInt64(send *int64, recv []int64, h *handle) error {
	return mpiError("MPI_Iallgather", C.zoo_iallgather_int64((*C.int64_t)(unsafe.Pointer(send)),
		(*C.int64_t)(unsafe.Pointer(&recv[0])), w.comm, &h.req))
}

func (w *world) test(h *handle) (bool, error) {
	if err := mpiError("MPI_Test", C.zoo_test(&h.req, &h.flag)); err != nil {
		return false, err
	}
	h.fin = h.flag != 0
	return h.fin, nil
}

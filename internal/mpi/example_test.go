package mpi_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/d73a19ff/zoo/internal/mpi"
)

// A data-parallel step: every rank computes the gradient of its own
// batch, and the sum over ranks, divided by their number, is the
// gradient of the whole batch. Run the program as
// mpirun -np 2 ./prog, built with -tags mpi; built without, it is one
// rank. (The examples have no Output and are not run: MPI can be
// initialised once per process, and the tests have done it.)
func Example() {
	comm, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	grad := make([]float32, 1000) // filled by this rank's backward
	if err := comm.AllreduceFloat32(grad); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.As(err, new(*mpi.TimeoutError)) {
			comm.Abort(1) // another rank is gone: end the job
		}
		os.Exit(1)
	}
	for i := range grad {
		grad[i] /= float32(comm.Size())
	}
	if err := comm.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		comm.Abort(1)
	}
}

// Reducing gradients in buckets while backward runs: a bucket's sum
// starts as soon as its gradients are complete, and a Test after each
// layer moves the sums along (Open MPI moves them only inside MPI calls).
func ExampleComm_IallreduceFloat32() {
	comm, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buckets := [][]float32{make([]float32, 1<<20), make([]float32, 1<<20)}
	var reqs []*mpi.Request
	for _, b := range buckets { // in the order backward completes them
		// ... backward of the layers whose gradients are in b ...
		r, err := comm.IallreduceFloat32(b)
		if err != nil {
			comm.Abort(1)
		}
		reqs = append(reqs, r)
		for _, r := range reqs { // after each layer of backward
			if _, err := r.Test(); err != nil {
				comm.Abort(1)
			}
		}
	}
	for _, r := range reqs {
		if err := r.Wait(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			comm.Abort(1)
		}
	}
	comm.Finalize()
}

//go:build !mpi

package mpi

import (
	"strings"
	"testing"
)

const noMPI = "this zoo was built without MPI; rebuild with -tags mpi (needs libopenmpi-dev)"

// TestInitUnderLauncher checks that a build without MPI refuses to run as
// one of several ranks, with the environment each launcher sets.
func TestInitUnderLauncher(t *testing.T) {
	for _, env := range []string{"OMPI_COMM_WORLD_SIZE=2", "PMI_SIZE=3", "PMIX_RANK=1"} {
		out, err := runHelper(t, "init", env)
		if err == nil || !strings.Contains(out, noMPI) {
			t.Errorf("%s: Init gave %v, want an error saying %q; output:\n%s", env, err, noMPI, out)
		}
	}
	// One rank is a plain run.
	if out, err := runHelper(t, "init", "OMPI_COMM_WORLD_SIZE=1"); err != nil || !strings.Contains(out, "rank 0 of 1") {
		t.Errorf("OMPI_COMM_WORLD_SIZE=1: %v\n%s", err, out)
	}
}

// TestMpirunWithoutMPI runs a build without MPI under the real mpirun:
// two ranks must fail, not train twice.
func TestMpirunWithoutMPI(t *testing.T) {
	for _, tc := range []struct {
		np   string
		want string
	}{{"2", noMPI}, {"1", "rank 0 of 1"}} {
		out, err := mpirun(t, tc.np, "init")
		// With two ranks, mpirun may kill the second before it prints: the
		// first one to fail aborts the job.
		if (err == nil) != (tc.np == "1") || !strings.Contains(out, tc.want) {
			t.Errorf("mpirun -np %s: %v; want %q; output:\n%s", tc.np, err, tc.want, out)
		}
	}
}

package mpi

import (
	"fmt"
	"os"
	"strconv"
)

// launched reports whether the environment says this process is one of
// several ranks started by an MPI launcher, and which variable says so.
// getenv is os.Getenv, or a map's lookup in the tests. The launchers set:
//
//	OMPI_COMM_WORLD_SIZE  Open MPI's mpirun (4.x and 5.x)
//	PMI_SIZE              MPICH's and Intel MPI's mpiexec (Hydra), srun --mpi=pmi2
//	PMIX_RANK             PMIx launchers (srun --mpi=pmix, prterun); no size,
//	                      so a rank > 0, or SLURM_STEP_NUM_TASKS > 1
func launched(getenv func(string) string) (size int, why string, ok bool) {
	atoi := func(name string) int {
		n, err := strconv.Atoi(getenv(name))
		if err != nil {
			return 0
		}
		return n
	}
	for _, name := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"} {
		if n := atoi(name); n > 1 {
			return n, fmt.Sprintf("%s=%d", name, n), true
		}
	}
	if getenv("PMIX_RANK") != "" {
		if n := atoi("SLURM_STEP_NUM_TASKS"); n > 1 {
			return n, fmt.Sprintf("PMIX_RANK is set and SLURM_STEP_NUM_TASKS=%d", n), true
		}
		if r := atoi("PMIX_RANK"); r > 0 {
			return r + 1, fmt.Sprintf("PMIX_RANK=%d", r), true
		}
	}
	return 1, "", false
}

// errNoMPI is Init's error in a build without -tags mpi that was launched
// as one of several ranks.
func errNoMPI(size int, why string) error {
	return fmt.Errorf("mpi: this zoo was built without MPI; rebuild with -tags mpi (needs libopenmpi-dev) "+
		"or run it without mpirun (the launcher started %d ranks: %s)", size, why)
}

// Launched reports whether this process is one of several ranks started by
// an MPI launcher (mpirun, mpiexec, srun): whether a program should call
// Init. A -tags mpi program started by hand is not, and runs alone.
func Launched() bool {
	_, _, ok := launched(os.Getenv)
	return ok
}

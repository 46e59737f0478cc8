package mpi

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// mpirun runs the test binary as helper name under
// mpirun -np np, with mpirun's extra flags args, and returns the combined
// output of mpirun and the ranks. It skips the test if mpirun is not on
// PATH or this process is itself one of several ranks, and fails it if
// mpirun runs longer than a minute.
func mpirun(t *testing.T, np, name string, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun is not on PATH (apt-get install openmpi-bin)")
	}
	if comm.Size() > 1 {
		t.Skip("already one of several ranks")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	argv := append([]string{"-np", np, "--allow-run-as-root", "--oversubscribe"}, args...)
	cmd := exec.CommandContext(ctx, path, append(argv, os.Args[0], "-test.run=^$")...)
	cmd.Env = append(os.Environ(), helperEnv+"="+name)
	out, err := cmd.CombinedOutput()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("mpirun %v did not finish in a minute; output:\n%s", argv, out)
	}
	return string(out), err
}

//go:build mpi

package mpi

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// deathEnv tells the "dead" helper how rank 1 goes.
const deathEnv = "ZOO_MPI_DEATH"

func init() {
	skipAll = func(err error) bool { return errors.Is(err, errNoOrted) }
	// dead: rank 1 leaves as deathEnv says (exit0: os.Exit(0) without
	// Finalize; exit1: os.Exit(1); kill: SIGKILL; hang: sleeps a minute
	// outside MPI) while rank 0 sums a buffer with a 2 s timeout. Rank 0
	// checks the *TimeoutError, prints it and aborts the job with code 3,
	// as a training program would.
	helpers["dead"] = func() int {
		c, err := Init()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		const timeout = 2 * time.Second
		c.SetTimeout(timeout)
		if c.Rank() == 1 {
			switch os.Getenv(deathEnv) {
			case "exit0":
				os.Exit(0)
			case "exit1":
				os.Exit(1)
			case "kill":
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			case "hang":
				time.Sleep(time.Minute)
			}
		}
		start := time.Now()
		err = c.AllreduceFloat32(make([]float32, 1000))
		elapsed := time.Since(start)
		var te *TimeoutError
		if !errors.As(err, &te) {
			fmt.Fprintf(os.Stderr, "FAIL: rank %d: AllreduceFloat32 returned %v after %v, want a *TimeoutError\n", c.Rank(), err, elapsed)
			c.Abort(1)
		}
		// The poll sleeps at most 1 ms between tests; a second of slack
		// is for a loaded machine.
		if te.Op != "AllreduceFloat32" || te.Rank != 0 || te.Size != 2 || te.Elapsed < timeout || elapsed > timeout+time.Second {
			fmt.Fprintf(os.Stderr, "FAIL: got %+v after %v, want AllreduceFloat32 on rank 0 of 2 after %v\n", *te, elapsed, timeout)
			c.Abort(1)
		}
		fmt.Fprintln(os.Stderr, err)
		if err := c.AllreduceFloat32(make([]float32, 1)); err == nil || !errors.As(err, &te) {
			fmt.Fprintf(os.Stderr, "FAIL: a reduction after the timeout returned %v, want the timeout again\n", err)
			c.Abort(1)
		}
		c.Abort(3)
		return 0
	}
}

// TestMPICollectives runs checkCollectives on 2 and 3 ranks (3 is not a
// power of two, which MPI's algorithms treat apart), over shared memory
// and over TCP.
func TestMPICollectives(t *testing.T) {
	for _, tc := range []struct{ np, btl string }{{"2", "self,vader"}, {"3", "self,vader"}, {"2", "self,tcp"}} {
		out, err := mpirun(t, tc.np, "collectives", "--mca", "btl", tc.btl)
		for r := range int(tc.np[0] - '0') {
			if want := fmt.Sprintf("rank %d of %s: ok", r, tc.np); !strings.Contains(out, want) {
				t.Errorf("-np %s --mca btl %s: no %q", tc.np, tc.btl, want)
			}
		}
		if err != nil || t.Failed() {
			t.Fatalf("-np %s --mca btl %s: %v\n%s", tc.np, tc.btl, err, out)
		}
	}
}

// TestMPIHungPeer: rank 1 never reaches the collective, so rank 0's
// timeout ends the job. The helper checks the error; here, that the user
// sees it, that the job stopped, and how.
func TestMPIHungPeer(t *testing.T) {
	t.Parallel()
	start := time.Now()
	out, err := mpirun(t, "2", "dead", "-x", deathEnv+"=hang")
	checkAborted(t, out, err, time.Since(start), 3)
}

// checkAborted checks the output of the "dead" helper when rank 0 timed
// out: its error, then the job aborted with exit status code (mpirun's),
// well before rank 1 would have ended. mpirun's own "MPI_ABORT was
// invoked" message is not checked: it sometimes fails to print
// ("ORTE_ERROR_LOG: Out of resource in file orte/util/show_help.c").
func checkAborted(t *testing.T, out string, err error, elapsed time.Duration, code int) {
	t.Helper()
	for _, want := range []string{
		"mpi: AllreduceFloat32 on rank 0 of 2 did not complete after 2",
		"another rank probably died or hangs; see its output",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q", want)
		}
	}
	var exit interface{ ExitCode() int }
	if !errors.As(err, &exit) || exit.ExitCode() != code {
		t.Errorf("mpirun returned %v, want exit status %d", err, code)
	}
	// Start-up takes about a second here; rank 1 would sleep a minute.
	if elapsed > 20*time.Second {
		t.Errorf("the job took %v", elapsed)
	}
	if strings.Contains(out, "FAIL") || t.Failed() {
		t.Fatalf("after %v:\n%s", elapsed, out)
	}
}

// TestMPIDeadPeer: rank 1 dies before the collective. What the user sees
// depends on Open MPI's launcher (observed with Open MPI 4.1.4's mpirun):
// by default mpirun notices the death, kills the other ranks at once
// (rank 0 does not reach its timeout, unless rank 1 is slow to die) and
// says which rank died and how.
// With --mca orte_abort_on_non_zero_status 0 it lets the survivors run,
// and then rank 0's timeout ends the job, as for a hung peer (a rank
// that exits 0 without Finalize is still killed by mpirun's default).
// Either way the job ends, with a message, in a bounded time.
func TestMPIDeadPeer(t *testing.T) {
	for _, tc := range []struct {
		death string
		want  []string // what mpirun says; nil: rank 0 times out
		args  []string
		code  int // mpirun's exit status when rank 0 times out
	}{
		{"exit0", []string{"process rank 1", "exiting improperly", `exited without calling "finalize"`}, nil, 0},
		{"exit1", []string{"exited with non-zero status", "Exit code:    1"}, nil, 0},
		{"kill", []string{"process rank 1", "exited on signal 9 (Killed)"}, nil, 0},
		// mpirun exits with rank 0's abort code, unless a rank was
		// killed by a signal: then with 128+9.
		{"exit1", nil, []string{"--mca", "orte_abort_on_non_zero_status", "0"}, 3},
		{"kill", nil, []string{"--mca", "orte_abort_on_non_zero_status", "0"}, 137},
	} {
		name := tc.death
		if tc.args != nil {
			name += "/no-abort-on-exit"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each job mostly waits
			start := time.Now()
			out, err := mpirun(t, "2", "dead", append(tc.args, "-x", deathEnv+"="+tc.death)...)
			elapsed := time.Since(start)
			if tc.want == nil {
				checkAborted(t, out, err, elapsed, tc.code)
				return
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("mpirun does not say %q", want)
				}
			}
			// mpirun kills rank 0, usually before its 2 s timeout: the
			// job takes start-up time only, about a second here. But a
			// rank that takes longer to die (with -race, Go's exit sleeps
			// a second) lets rank 0 time out and print its error first.
			// Either way the job must end soon, and not succeed.
			if err == nil || elapsed > 10*time.Second || strings.Contains(out, "FAIL") {
				t.Errorf("mpirun returned %v after %v", err, elapsed)
			}
			if strings.Contains(out, "AllreduceFloat32") {
				t.Logf("rank 0 timed out before mpirun killed it")
			}
			if t.Failed() {
				t.Fatalf("output:\n%s", out)
			}
		})
	}
}

// TestErrorsReturn checks that an MPI error comes back as a Go error with
// MPI's text, rather than aborting the process (MPI_ERRORS_ARE_FATAL, the
// default, would end the test binary here).
func TestErrorsReturn(t *testing.T) {
	comm.mu.Lock()
	var h handle
	err := comm.w.iallreduce(nil, -1, float32T, &h)
	comm.mu.Unlock()
	if err == nil || !strings.Contains(err.Error(), "MPI_Iallreduce: MPI_ERR_COUNT") {
		t.Fatalf("a negative count gave %v, want MPI_ERR_COUNT", err)
	}
	t.Log(err)
}

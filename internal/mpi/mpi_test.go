package mpi

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// comm is the test binary's Comm. MPI can be initialised once per
// process, so TestMain makes it for all the tests; the tests that need a
// fresh process (or several) re-execute the test binary with helperEnv
// naming one of the helpers.
var comm *Comm

// skipAll says whether Init's error means that the tests cannot run here,
// rather than that they failed.
var skipAll = func(error) bool { return false }

// helperEnv names the helper a re-executed test binary runs instead of
// the tests.
const helperEnv = "ZOO_MPI_HELPER"

// helpers are the programs a re-executed test binary can run: each
// returns the process's exit code.
var helpers = map[string]func() int{
	// init starts MPI, prints the rank and size, and finalizes.
	"init": func() int {
		c, err := Init()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("rank %d of %d\n", c.Rank(), c.Size())
		if err := c.Finalize(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	},
	// collectives runs checkCollectives on every rank.
	"collectives": func() int {
		return withComm(func(c *Comm) error {
			if err := checkCollectives(c); err != nil {
				return err
			}
			fmt.Printf("rank %d of %d: ok\n", c.Rank(), c.Size())
			return nil
		})
	},
	// finalize checks what happens after Finalize.
	"finalize": func() int {
		c, err := Init()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		r, err := c.IallreduceFloat32([]float32{1})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := c.Finalize(); err == nil || !strings.Contains(err.Error(), "1 requests were never waited for") {
			fmt.Fprintf(os.Stderr, "FAIL: Finalize with a request in flight: got %v\n", err)
			return 1
		}
		if err := r.Wait(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := c.Finalize(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for _, err := range []error{c.Finalize(), c.AllreduceFloat32([]float32{1}), c.Barrier()} {
			if !errors.Is(err, errFinalized) {
				fmt.Fprintf(os.Stderr, "FAIL: a call after Finalize: got %v, want %v\n", err, errFinalized)
				return 1
			}
		}
		if _, err := Init(); err == nil {
			fmt.Fprintln(os.Stderr, "FAIL: a second Init succeeded")
			return 1
		}
		fmt.Println("finalize: ok")
		return 0
	},
}

// withComm runs f between Init and Finalize and turns errors into exit
// code 1.
func withComm(f func(c *Comm) error) int {
	c, err := Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := f(c); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: rank %d: %v\n", c.Rank(), err)
		c.Abort(1)
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		f, ok := helpers[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "no helper %q\n", name)
			os.Exit(2)
		}
		os.Exit(f())
	}
	var err error
	if comm, err = Init(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if skipAll(err) {
			fmt.Println("SKIP: all tests, for want of Open MPI's programs")
			os.Exit(0)
		}
		os.Exit(1)
	}
	code := m.Run()
	if err := comm.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// runHelper re-executes the test binary (without a launcher) as helper
// name, with extra environment variables, and returns its output.
func runHelper(t *testing.T, name string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+name), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// checkCollectives checks every collective on c, for any number of ranks:
// each rank contributes values that depend on its rank, so that the sums
// and gathers are known. Every rank must call it.
func checkCollectives(c *Comm) error {
	rank, size := c.Rank(), c.Size()
	before := c.Stats()
	var bytes int64

	// A float32 sum over a length that is a multiple of nothing in
	// particular (a prime): every element is a small integer, so the sums
	// are exact in any order.
	const n32 = 1000003
	a := make([]float32, n32)
	for i := range a {
		a[i] = float32((rank + 1) * (i % 97))
	}
	if err := c.AllreduceFloat32(a); err != nil {
		return err
	}
	for i, v := range a {
		if want := float32(size * (size + 1) / 2 * (i % 97)); v != want {
			return fmt.Errorf("AllreduceFloat32: element %d is %v, want %v", i, v, want)
		}
	}
	bytes += 4 * n32

	const n64 = 12345
	d := make([]float64, n64)
	for i := range d {
		d[i] = float64(rank+1) * float64(i) * 0.5
	}
	if err := c.AllreduceFloat64(d); err != nil {
		return err
	}
	for i, v := range d {
		if want := float64(size*(size+1)/2) * float64(i) * 0.5; v != want {
			return fmt.Errorf("AllreduceFloat64: element %d is %v, want %v", i, v, want)
		}
	}
	bytes += 8 * n64

	// Empty buffers, one of them nil, are no-ops.
	if err := c.AllreduceFloat32([]float32{}); err != nil {
		return fmt.Errorf("empty AllreduceFloat32: %w", err)
	}
	if err := c.AllreduceFloat64(nil); err != nil {
		return fmt.Errorf("nil AllreduceFloat64: %w", err)
	}

	// Buffers longer than one MPI call takes: chunks of 7, the last one
	// shorter.
	saved := maxCount
	maxCount = 7
	c32, c64 := make([]float32, 23), make([]float64, 23)
	for i := range c32 {
		c32[i], c64[i] = float32(rank*100+i), float64(rank*100+i)
	}
	err32, err64 := c.AllreduceFloat32(c32), c.AllreduceFloat64(c64)
	maxCount = saved
	if err := errors.Join(err32, err64); err != nil {
		return fmt.Errorf("chunked: %w", err)
	}
	for i := range c32 {
		want := 100*size*(size-1)/2 + size*i
		if c32[i] != float32(want) || c64[i] != float64(want) {
			return fmt.Errorf("chunked: element %d is %v and %v, want %d", i, c32[i], c64[i], want)
		}
	}
	bytes += 4*23 + 8*23

	// Two non-blocking reductions in flight at once, waited for in the
	// other order.
	x, y := make([]float32, 100000), make([]float32, 3)
	for i := range x {
		x[i] = float32(rank)
	}
	for i := range y {
		y[i] = float32(rank * i)
	}
	rx, err := c.IallreduceFloat32(x)
	if err != nil {
		return err
	}
	ry, err := c.IallreduceFloat32(y)
	if err != nil {
		return err
	}
	if err := errors.Join(ry.Wait(), rx.Wait(), rx.Wait()); err != nil {
		return err
	}
	for i, v := range x {
		if want := float32(size * (size - 1) / 2); v != want {
			return fmt.Errorf("IallreduceFloat32: x[%d] is %v, want %v", i, v, want)
		}
	}
	for i, v := range y {
		if want := float32(size * (size - 1) / 2 * i); v != want {
			return fmt.Errorf("IallreduceFloat32: y[%d] is %v, want %v", i, v, want)
		}
	}
	bytes += 4 * (100000 + 3)

	// Test, until it says the reduction is done.
	for i := range y {
		y[i] = 1
	}
	ry, err = c.IallreduceFloat32(y)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		done, err := ry.Test()
		if err != nil {
			return err
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Test: a reduction of 3 floats not done after 10 s")
		}
	}
	if err := ry.Wait(); err != nil || !slices.Equal(y, []float32{float32(size), float32(size), float32(size)}) {
		return fmt.Errorf("Test: reduction gave %v, %v; want %d", err, y, size)
	}
	bytes += 4 * 3

	// Broadcasts from the last rank and from the first.
	msg := make([]byte, 21)
	root := size - 1
	if rank == root {
		copy(msg, fmt.Sprintf("hello from rank %d", root))
	}
	if err := c.BcastBytes(msg, root); err != nil {
		return err
	}
	if want := fmt.Sprintf("hello from rank %d", root); !strings.HasPrefix(string(msg), want) {
		return fmt.Errorf("BcastBytes: got %q, want %q", msg, want)
	}
	w := make([]float32, 1001)
	if rank == 0 {
		for i := range w {
			w[i] = float32(i) / 3
		}
	}
	if err := c.BcastFloat32(w, 0); err != nil {
		return err
	}
	for i, v := range w {
		if want := float32(i) / 3; v != want {
			return fmt.Errorf("BcastFloat32: element %d is %v, want %v", i, v, want)
		}
	}
	if err := c.BcastFloat32(w, size); err == nil {
		return fmt.Errorf("BcastFloat32 from root %d of %d did not fail", size, size)
	}

	all, err := c.AllgatherInt64(int64(10*rank + 1))
	if err != nil {
		return err
	}
	want := make([]int64, size)
	for i := range want {
		want[i] = int64(10*i + 1)
	}
	if !slices.Equal(all, want) {
		return fmt.Errorf("AllgatherInt64: got %v, want %v", all, want)
	}
	if err := c.Barrier(); err != nil {
		return err
	}

	// 9 reductions (2 of them empty), 2 broadcasts, a gather and a
	// barrier; the broadcast from a root that does not exist never
	// started.
	after := c.Stats()
	got := Stats{Reductions: after.Reductions - before.Reductions, ReducedBytes: after.ReducedBytes - before.ReducedBytes,
		Collectives: after.Collectives - before.Collectives}
	if wantStats := (Stats{Reductions: 9, ReducedBytes: bytes, Collectives: 13}); got != wantStats {
		return fmt.Errorf("Stats: counted %+v, want %+v", got, wantStats)
	}
	if size > 1 && after.Wait <= before.Wait {
		return fmt.Errorf("Stats: Wait did not grow from %v", before.Wait)
	}
	return nil
}

func TestCollectives(t *testing.T) {
	if err := checkCollectives(comm); err != nil {
		t.Fatal(err)
	}
}

// TestSingleProcess checks the semantics of one rank: the test binary run
// on its own, with or without -tags mpi.
func TestSingleProcess(t *testing.T) {
	if comm.Size() != 1 {
		t.Skipf("run under a launcher with %d ranks", comm.Size())
	}
	if comm.Rank() != 0 {
		t.Fatalf("Rank() = %d, want 0", comm.Rank())
	}
	buf := []float32{1.5, -2, 3}
	if err := comm.AllreduceFloat32(buf); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(buf, []float32{1.5, -2, 3}) {
		t.Errorf("a sum over one rank changed the buffer to %v", buf)
	}
	all, err := comm.AllgatherInt64(-7)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(all, []int64{-7}) {
		t.Errorf("AllgatherInt64(-7) = %v, want [-7]", all)
	}
	if err := comm.BcastBytes([]byte("x"), 1); err == nil {
		t.Error("BcastBytes from root 1 of 1 did not fail")
	}
}

func TestInitOnce(t *testing.T) {
	if _, err := Init(); err == nil {
		t.Fatal("a second Init succeeded")
	}
}

func TestFinalize(t *testing.T) {
	out, err := runHelper(t, "finalize")
	if err != nil || !strings.Contains(out, "finalize: ok") {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestSetTimeout(t *testing.T) {
	defer comm.SetTimeout(comm.Timeout())
	if got := comm.Timeout(); got != DefaultTimeout {
		t.Errorf("the timeout is %v after Init, want %v", got, DefaultTimeout)
	}
	comm.SetTimeout(-time.Second)
	if got := comm.Timeout(); got != 0 {
		t.Errorf("SetTimeout(-1s) gave %v, want 0 (none)", got)
	}
}

func TestTimeoutError(t *testing.T) {
	var err error = fmt.Errorf("step 3: %w", &TimeoutError{Op: "AllreduceFloat32", Rank: 1, Size: 4, Elapsed: 2001 * time.Millisecond})
	var te *TimeoutError
	if !errors.As(err, &te) || te.Rank != 1 {
		t.Fatalf("errors.As did not find the *TimeoutError in %v", err)
	}
	for _, want := range []string{"AllreduceFloat32 on rank 1 of 4", "after 2.001s", "another rank probably died", "see its output"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

// TestPanicAfterInit checks that MPI left the Go runtime's signal
// handlers alone: a nil dereference is still a panic that recover sees.
func TestPanicAfterInit(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Error("no panic")
		}
	}()
	var p *int
	t.Log(*p)
}

func TestLaunched(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		size int
	}{
		{nil, 1},
		{map[string]string{"OMPI_COMM_WORLD_SIZE": "1", "OMPI_COMM_WORLD_RANK": "0"}, 1},
		{map[string]string{"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "0"}, 2},
		{map[string]string{"PMI_SIZE": "4", "PMI_RANK": "3"}, 4},
		{map[string]string{"PMI_SIZE": "junk"}, 1},
		{map[string]string{"PMIX_RANK": "0"}, 1},
		{map[string]string{"PMIX_RANK": "0", "SLURM_STEP_NUM_TASKS": "8"}, 8},
		{map[string]string{"PMIX_RANK": "2"}, 3},
	} {
		size, why, ok := launched(func(k string) string { return tc.env[k] })
		if size != tc.size || ok != (tc.size > 1) || ok != (why != "") {
			t.Errorf("launched(%v) = %d, %q, %v; want size %d", tc.env, size, why, ok, tc.size)
		}
	}
}

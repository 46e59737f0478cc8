// Package peakrss reads the peak resident set size of the running process,
// for benchmarks that report memory beside time.
//
// It reads VmHWM from /proc/self/status (Linux) rather than getrusage's
// ru_maxrss: Linux carries ru_maxrss across execve, so a process started by
// a big parent (go test starts the test binary with vfork) reports the
// parent's peak when it is larger; VmHWM belongs to the process's own
// address space. tools/pytorch/bench_long.py reads the same field.
package peakrss

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
)

// MB returns the peak resident set size of this process so far in MB
// (10⁶ bytes), and false where /proc/self/status has no VmHWM (any system
// but Linux).
func MB() (float64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	return parse(b)
}

// parse reads the "VmHWM:  123456 kB" line of a /proc/PID/status file.
func parse(status []byte) (float64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, false
		}
		return float64(kb) * 1024 / 1e6, true
	}
	return 0, false
}

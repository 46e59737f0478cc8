//go:build unix

package llama

import (
	"syscall"
	"time"
)

// cpuTime is the user and system CPU time this process has used so far,
// and whether the system reports it. On a machine shared with other work
// it moves far less than the wall clock with the load: benchmarks report
// it beside their rates.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

//go:build unix

package finetune

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system, all threads) this process has
// used: with the wall time it shows how much of the machine a benchmark got,
// which on a shared machine differs from run to run.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

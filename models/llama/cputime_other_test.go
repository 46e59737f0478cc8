//go:build !unix

package llama

import "time"

// cpuTime reports no CPU time where getrusage is missing.
func cpuTime() (time.Duration, bool) { return 0, false }

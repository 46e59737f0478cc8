//go:build !unix

package vit

import "time"

// cpuTime is not measured here: the benchmarks then report no CPU time.
func cpuTime() time.Duration { return 0 }

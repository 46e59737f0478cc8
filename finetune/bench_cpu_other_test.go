//go:build !unix

package finetune

import "time"

// cpuTime is not measured here: the benchmarks then report no CPU time.
func cpuTime() time.Duration { return 0 }

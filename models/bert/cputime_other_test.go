//go:build !unix

package bert

import "time"

// cpuTime is unavailable here: the benchmarks' cpu-ms/step reads 0.
func cpuTime() time.Duration { return 0 }

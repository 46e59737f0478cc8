package train

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A warmup longer than the run is refused for the schedules that decay
// after it (linear, cosine, a recipe's default) and taken for noam, whose
// warmup is only where its curve peaks (the Transformer paper's 4000
// steps, on a short run).
func TestArgsWarmupLongerThanTheRun(t *testing.T) {
	a := Args{OutputDir: "run", BatchSize: 1, MaxSteps: 10, WarmupSteps: 40, AdamBeta1: 0.9, AdamBeta2: 0.98, AdamEpsilon: 1e-9}
	for _, s := range []string{"", "linear", "cosine"} {
		a.LRSchedulerType = s
		require.ErrorContains(t, a.Validate(), "warmup_steps 40 must be in [0, max_steps 10]", s)
	}
	a.LRSchedulerType = "noam"
	require.NoError(t, a.Validate())
	a.WarmupSteps = -1
	require.ErrorContains(t, a.Validate(), "warmup_steps -1 must be in [0, max_steps 10]")
}

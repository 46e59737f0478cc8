package vit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRollout checks Rollout on attention worked out by hand: T = 3
// tokens (the class token and 2 patches).
func TestRollout(t *testing.T) {
	// cls→patch 2, patch 1→itself, patch 2→itself.
	l1 := []float64{0, 0, 1, 0, 1, 0, 0, 0, 1}
	// cls→patch 1.
	l2 := []float64{0, 1, 0, 0, 1, 0, 0, 0, 1}
	for _, c := range []struct {
		name  string
		probs [][]float64
		h     int
		want  []float64
	}{
		// Ã1 row 0 = [½, 0, ½]: the patches [0, ½], scaled to [0, 1].
		{"one layer", [][]float64{l1}, 1, []float64{0, 1}},
		// Ã2·Ã1 row 0 = ½[½, 0, ½] + ½[0, 1, 0] = [¼, ½, ¼]: [½, ¼] → [1, ½].
		{"two layers", [][]float64{l1, l2}, 1, []float64{1, 0.5}},
		// Two heads, one on each patch, average to A row 0 = [0, ½, ½].
		{"heads averaged", [][]float64{append(append([]float64(nil), l2...), l1...)}, 2, []float64{1, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Rollout(c.probs, 1, c.h, 3)
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.InDeltaSlice(t, c.want, got[0], 1e-12)
		})
	}
	_, err := Rollout([][]float64{l1[:5]}, 1, 1, 3)
	require.ErrorContains(t, err, "layer 0 has 5 probabilities, not B·h·T·T = 9")
	_, err = Rollout(nil, 1, 1, 3)
	require.ErrorContains(t, err, "0 layers")
}

func TestAttentionRollout(t *testing.T) {
	m, err := New(testConfig())
	require.NoError(t, err)
	px := make([]float32, 2*3*8*8)
	for i := range px {
		px[i] = float32(i%7) / 7
	}
	maps, err := m.AttentionRollout(px, 2)
	require.NoError(t, err)
	require.Len(t, maps, 2)
	for _, mp := range maps {
		require.Len(t, mp, 4, "a 2×2 patch grid")
		top := 0.0
		for _, v := range mp {
			require.GreaterOrEqual(t, v, 0.0)
			top = max(top, v)
		}
		require.Equal(t, 1.0, top)
	}
	_, err = m.AttentionRollout(px[:10], 2)
	require.ErrorContains(t, err, "10 pixel values are not 2 images of 3×8×8")
}

func TestStepBytes(t *testing.T) {
	m, err := New(Fashion())
	require.NoError(t, err)
	c, err := NewForImageClassification(m, []string{"a", "b"})
	require.NoError(t, err)
	eval, step := c.StepBytes(64, 0, false), c.StepBytes(64, 0, true)
	require.Positive(t, eval)
	require.Greater(t, step, eval)
	require.Greater(t, c.StepBytes(128, 0, true), step)
	require.NoError(t, c.CheckStep(64, true))
	require.ErrorContains(t, c.CheckStep(1<<40, true), "vit: a step of 1099511627776 images of 28×28 (50 tokens) needs")
	require.ErrorContains(t, c.CheckStep(0, true), "batch size 0 must be positive")
}

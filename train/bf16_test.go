package train

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/layers"
)

// TestRunLearnsBF16 trains the toy model with bf16 products: it learns as
// in float32, its weights differ from float32's (the products were
// rounded) but stay float32 in the checkpoint. On a CPU without AVX-512
// BF16 the run prints the note and equals float32's.
func TestRunLearnsBF16(t *testing.T) {
	run := func(bf16 bool) (*toyTask, Result, string, string) {
		dir := t.TempDir()
		k := newToy(t, 1, 0.1)
		cfg := toyConfig(dir, 30)
		cfg.BF16 = bf16
		tr, err := New(k, newToyData(1), cfg)
		require.NoError(t, err)
		defer tr.Close()
		var progress strings.Builder
		res, err := tr.Run(context.Background(), &progress)
		require.NoError(t, err)
		return k, res, progress.String(), dir
	}
	f32, resF32, _, _ := run(false)
	bf, res, progress, dir := run(true)
	require.Equal(t, 30, res.Steps)
	require.Less(t, res.ValLoss, math.Log(toyV)/2, "the bigram model learns the sequence in bf16")
	require.InDelta(t, resF32.ValLoss, res.ValLoss, 0.05*resF32.ValLoss, "bf16's validation loss is float32's, nearly")
	same := true
	for i, p := range f32.store.Params() {
		if !equalData(p.Value.Data(), bf.store.Params()[i].Value.Data()) {
			same = false
		}
	}
	if !ops.BF16Native() {
		require.Contains(t, progress, bf16Note)
		require.True(t, same, "without BF16 the run is float32's")
		return
	}
	require.NotContains(t, progress, bf16Note)
	require.Equal(t, ops.BF16Slow(), strings.Contains(progress, bf16SlowNote), "the note on a CPU where bf16 is slow, only there")
	require.False(t, same, "the bf16 run's weights are not float32's")
	w, err := os.ReadFile(filepath.Join(dir, CheckpointsDir, "final", layers.WeightsFile))
	require.NoError(t, err)
	require.Contains(t, string(w[:min(len(w), 4096)]), `"dtype":"F32"`, "checkpoints stay float32")
	require.NotContains(t, string(w[:min(len(w), 4096)]), `"dtype":"BF16"`)
}

func equalData(a, b any) bool {
	x, y := a.([]float32), b.([]float32)
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			return false
		}
	}
	return true
}

// TestRunResumesExactlyBF16 is TestRunResumesExactly with bf16 products:
// an interrupted and resumed bf16 run ends with the weights of one
// uninterrupted, bit for bit.
func TestRunResumesExactlyBF16(t *testing.T) {
	runResumesExactly(t, func(c *Config) { c.BF16 = true })
}

// TestArgsBF16 checks that bf16 reaches the engine's configuration.
func TestArgsBF16(t *testing.T) {
	require.True(t, Args{BF16: true}.Engine(nil).BF16)
	require.False(t, Args{}.Engine(nil).BF16)
}

// On a CPU whose bf16 products are no faster than float32's (Intel's with
// AMX), a bf16 run says so in one line and stays bf16; a float32 run does
// not.
func TestRunNotesSlowBF16(t *testing.T) {
	if !ops.BF16Native() {
		t.Skip("no AVX-512 BF16: the run is float32 with bf16Note")
	}
	saved := bf16Slow
	defer func() { bf16Slow = saved }()
	bf16Slow = func() bool { return true }
	for _, bf16 := range []bool{true, false} {
		cfg := toyConfig(t.TempDir(), 6)
		cfg.BF16 = bf16
		tr, err := New(newToy(t, 1, 0.1), newToyData(1), cfg)
		require.NoError(t, err)
		var progress strings.Builder
		_, err = tr.Run(context.Background(), &progress)
		tr.Close()
		require.NoError(t, err)
		require.Equal(t, bf16, strings.Contains(progress.String(), bf16SlowNote), "bf16 %v: %s", bf16, progress.String())
		if bf16 {
			require.Equal(t, 1, strings.Count(progress.String(), "bf16:"), "one line")
		}
	}
}

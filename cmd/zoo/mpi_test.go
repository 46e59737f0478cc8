//go:build mpi

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// `mpirun -np 2 zoo pretrain gpt …` is the same run as one process
// accumulating two micro-batches a step: the same losses and the same
// final weights, bit for bit; rank 0 alone prints and writes the run
// directory.
func TestPretrainGPTTwoRanks(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun is not on PATH (apt-get install openmpi-bin libopenmpi-dev)")
	}
	tmp := t.TempDir()
	common := []string{"pretrain", "gpt", "--max-steps", "6", "--warmup-steps", "2", "--eval-interval", "3", "--save-interval", "3"}
	two := filepath.Join(tmp, "two")
	raw, err := json.Marshal(append(common, "--run", two))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpirun, "-np", "2", "--allow-run-as-root", "--oversubscribe",
		"-x", "GOMAXPROCS=1", "-x", "ZOO_TEST_CLI_ARGS="+string(raw), os.Args[0], "-test.run=^$")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	require.Equal(t, 1, bytes.Count(out.Bytes(), []byte("done: 6 steps")), "rank 0 alone prints:\n%s", out.String())

	acc := filepath.Join(tmp, "acc2.json")
	require.NoError(t, os.WriteFile(acc, []byte(`{"gradient_accumulation_steps": 2}`), 0o644))
	one := filepath.Join(tmp, "one")
	var o1, e1 bytes.Buffer
	require.Equal(t, 0, run(append(common, "--config", acc, "--run", one), &o1, &e1), e1.String())

	for _, f := range []string{"checkpoints/final/model.safetensors", "checkpoints/step-000003/optimizer.safetensors"} {
		a, err := os.ReadFile(filepath.Join(one, f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(two, f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(a, b), "%s differs between 2 ranks and 1 rank accumulating 2", f)
	}
	losses := func(dir string) []float64 {
		b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
		require.NoError(t, err)
		var out []float64
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var r struct{ Loss float64 }
			require.NoError(t, json.Unmarshal(line, &r))
			out = append(out, r.Loss)
		}
		return out
	}
	require.Equal(t, losses(one), losses(two))
	require.Len(t, losses(two), 6, "rank 0 alone writes metrics.jsonl")
}

//go:build mpi

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `mpirun -np 2 zoo pretrain llama …` is the same run as one process
// accumulating two micro-batches a step, as GPT's (TestPretrainGPTTwoRanks):
// the same losses and final weights, bit for bit; rank 0 alone prints.
func TestPretrainLlamaTwoRanks(t *testing.T) {
	tmp := t.TempDir()
	common := []string{"pretrain", "llama", "--preset", "tiny", "--tokenizer", "char", "--block-size", "32", "--max-steps", "6", "--warmup-steps", "2",
		"--eval-steps", "3", "--save-steps", "3"}
	two := filepath.Join(tmp, "two")
	out := twoRanks(t, append(common, "--run", two))
	require.Equal(t, 1, strings.Count(out, "done: 6 steps"), "rank 0 alone prints:\n%s", out)

	acc := filepath.Join(tmp, "acc2.json")
	require.NoError(t, os.WriteFile(acc, []byte(`{"gradient_accumulation_steps": 2}`), 0o644))
	one := filepath.Join(tmp, "one")
	var o1, e1 bytes.Buffer
	require.Equal(t, 0, run(append(common, "--config", acc, "--run", one), &o1, &e1), e1.String())

	sameFiles(t, one, two, "checkpoints/final/model.safetensors", "checkpoints/step-000003/optimizer.safetensors")
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

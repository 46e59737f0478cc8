//go:build mpi

package main

import (
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

	requireSameAsAccumulated(t, common, two)
}

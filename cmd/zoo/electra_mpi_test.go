//go:build mpi

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `mpirun -np 2 zoo pretrain electra …` is the same run as one process
// accumulating two micro-batches a step, as GPT's (TestPretrainGPTTwoRanks):
// the same losses and final weights of the discriminator and the
// generator, bit for bit (the generator's samples and dropout included);
// rank 0 alone prints.
func TestPretrainElectraTwoRanks(t *testing.T) {
	tmp := t.TempDir()
	common := []string{"pretrain", "electra", "--model", "tiny", "--corpus", bertTemplates(t, tmp, 200), "--vocab-size", "120",
		"--max-seq-length", "32", "--max-predictions", "5", "--batch-size", "4", "--eval-batches", "2",
		"--max-steps", "6", "--warmup-steps", "2", "--eval-steps", "3", "--save-steps", "3"}
	two := filepath.Join(tmp, "two")
	out := twoRanks(t, append(common, "--run", two))
	require.Equal(t, 1, strings.Count(out, "done: 6 steps"), "rank 0 alone prints:\n%s", out)

	one := requireSameAsAccumulated(t, common, two)
	sameFiles(t, one, two, "checkpoints/final/generator/model.safetensors")
}

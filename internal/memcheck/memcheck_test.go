package memcheck_test

import (
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/internal/memcheck"
)

// Mul and Sum saturate at math.MaxInt64 instead of wrapping.
func TestSaturatingArithmetic(t *testing.T) {
	assert.Equal(t, int64(24), memcheck.Mul(2, 3, 4))
	assert.Equal(t, int64(0), memcheck.Mul(0, math.MaxInt64, math.MaxInt64))
	assert.Equal(t, int64(math.MaxInt64), memcheck.Mul(1<<40, 1<<40))
	assert.Equal(t, int64(math.MaxInt64), memcheck.Mul(1<<62, 2))
	assert.Equal(t, int64(1<<62), memcheck.Mul(1<<31, 1<<31))
	assert.Equal(t, int64(6), memcheck.Sum(1, 2, 3))
	assert.Equal(t, int64(math.MaxInt64), memcheck.Sum(math.MaxInt64-1, 2))
}

// MemAvailable is read on Linux.
func TestAvailableMemory(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo")
	}
	assert.Positive(t, memcheck.AvailableMemory())
}

// CheckMemory lets a small need pass, and refuses an overflowed or absurd
// one with what needs it and what to lower.
func TestCheckMemory(t *testing.T) {
	require.NoError(t, memcheck.CheckMemory(1<<20, "x", "lower y"))
	for _, need := range []int64{math.MaxInt64, 1 << 60} {
		err := memcheck.CheckMemory(need, "pretrain: batch_size 7", "lower batch_size")
		require.Error(t, err)
		assert.ErrorContains(t, err, "pretrain: batch_size 7 needs")
		assert.ErrorContains(t, err, "; lower batch_size")
	}
}

// CheckParams names the largest term and the field to lower.
func TestCheckParams(t *testing.T) {
	small := []memcheck.Term{{What: "a", Lower: "a_size", N: 1000}}
	require.NoError(t, memcheck.CheckParams("fam", small, 4))
	huge := []memcheck.Term{
		{What: "embeddings, vocab_size 5", Lower: "vocab_size", N: 5},
		{What: "the blocks, n_layer 1000000000", Lower: "n_layer", N: 1 << 55},
		{What: "ln_f", Lower: "n_embd", N: 7},
	}
	err := memcheck.CheckParams("fam", huge, 4)
	require.Error(t, err)
	assert.ErrorContains(t, err, "fam: the model's 36028797018963980 parameters need")
	assert.ErrorContains(t, err, "most are the blocks, n_layer 1000000000: lower n_layer")
	err = memcheck.CheckParams("fam", []memcheck.Term{{What: "t", Lower: "t", N: math.MaxInt64}}, 4)
	assert.ErrorContains(t, err, "more parameters than int64 counts")
}

package models

// This file checks, before anything is allocated, that a model or a
// training step fits the machine's memory, so that an absurd config.json
// or batch size is an error naming what to lower, and not Go's "fatal
// error: out of memory" (which no recover catches).
//
// The families call it through this package (their New and Load check a
// model before allocating it, with no training engine); the arithmetic and
// the check against available memory live in the leaf internal/memcheck,
// which train uses for a run's estimate without importing models.

import (
	"fmt"
	"math"

	"github.com/d73a19ff/zoo/internal/memcheck"
)

// The arithmetic of estimates and the check against available memory are
// internal/memcheck's, which train uses too; these are their names here,
// where every family and pipeline calls them.

// Term is one summand of a size estimate: N elements (math.MaxInt64 when
// it overflowed), described by What (the config fields it is the product
// of, with their values) and Lower (the field to lower when it dominates).
type Term = memcheck.Term

// Mul is the product of non-negative factors, saturating at math.MaxInt64
// instead of overflowing.
func Mul(xs ...int64) int64 { return memcheck.Mul(xs...) }

// Sum is the sum of non-negative terms, saturating at math.MaxInt64.
func Sum(xs ...int64) int64 { return memcheck.Sum(xs...) }

// AvailableMemory is MemAvailable from /proc/meminfo in bytes: what the
// kernel can give without swapping. It is 0 when unknown.
func AvailableMemory() int64 { return memcheck.AvailableMemory() }

// CheckMemory refuses need bytes if they would not fit in the machine's
// available memory (MemAvailable, less a 10% margin), with an error that
// says what needs them and what to lower, e.g.
// CheckMemory(b, "pretrain: batch_size 64 × block 1024", "lower batch_size").
// A need of math.MaxInt64 (an overflowed estimate) is always refused.
func CheckMemory(need int64, what, lower string) error {
	return memcheck.CheckMemory(need, what, lower)
}

// CheckParams refuses a model whose parameters would not fit in memory:
// the terms are its parameter count (and buffers) in elements, bytesPer
// the bytes of one element (4 for float32). The error names family, the
// count, and the largest term with the field to lower. It is what every
// family's New calls before allocating a parameter.
func CheckParams(family string, terms []Term, bytesPer int64) error {
	return memcheck.CheckParams(family, terms, bytesPer)
}

// Count formats an element count for a message: the number, or "2^63 or
// more" for an overflowed (saturated) one.
func Count(n int64) string { return memcheck.Count(n) }

// The size limits every family's Config.Validate enforces, before any
// product of sizes is taken.
const (
	// MaxDim bounds each width and each count of tokens or positions
	// (vocab_size, n_positions, n_embd, d_model, ffn dims): 2^31−1, the
	// largest int32. The standard CBLAS interface and ONNX take 32-bit
	// dimensions, and Hugging Face's tokenizers 32-bit token ids; the
	// largest real vocabularies (about 2^18) and widths (about 2^14) are
	// far below it.
	MaxDim = math.MaxInt32
	// MaxLayers bounds a stack's depth (n_layer, encoder_layers,
	// decoder_layers): 2^16, hundreds of times the deepest real
	// Transformers (GPT-3's 96 layers).
	MaxLayers = 1 << 16
	// MaxLabels bounds a classifier's num_labels: 2^20. config.json's
	// num_labels makes one name per label, so a huge count is memory
	// spent before the model is built.
	MaxLabels = 1 << 20
)

// CheckSizes reports the first size outside [1, limit], naming its
// config.json field; prefix starts the message ("gpt config").
func CheckSizes(prefix string, sizes ...Size) error {
	for _, s := range sizes {
		if s.V <= 0 || s.V > s.Max {
			return fmt.Errorf("%s: %s %d must be in [1, %d]", prefix, s.Field, s.V, s.Max)
		}
	}
	return nil
}

// Size is a config.json size field, its value and its upper limit.
type Size struct {
	Field  string
	V, Max int
}

// StepEstimator is a Classifier that can estimate the memory of a step on
// B texts of T tokens before its graph is built: the classification
// pipelines check it before their first batch. A classifier without it is
// not checked.
type StepEstimator interface {
	// StepBytes estimates the buffers of one training step (training
	// true) or forward pass on B texts of T tokens, in bytes,
	// math.MaxInt64 if it overflows.
	StepBytes(batch, t int, training bool) int64
}

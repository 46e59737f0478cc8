package models

// This file checks, before anything is allocated, that a model or a
// training step fits the machine's memory, so that an absurd config.json
// or batch size is an error naming what to lower, and not Go's "fatal
// error: out of memory" (which no recover catches).
//
// It lives in models, not train: the first check is of a model, in the
// families' New and Load, which read config.json through this package and
// need no training engine (evaluation and inference build models without
// one); and every pipeline (pretrain, finetune, evaluation) imports models
// already. train is the engine the pipelines drive, not a place models
// should reach into to be built.

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strings"
)

// Term is one summand of a size estimate: N elements (math.MaxInt64 when
// it overflowed), described by What (the config fields it is the product
// of, with their values) and Lower (the field to lower when it dominates).
type Term struct {
	What  string
	Lower string
	N     int64
}

// Mul is the product of non-negative factors, saturating at math.MaxInt64
// instead of overflowing.
func Mul(xs ...int64) int64 {
	p := int64(1)
	for _, x := range xs {
		if x < 0 {
			x = 0
		}
		if x != 0 && p > math.MaxInt64/x {
			return math.MaxInt64
		}
		p *= x
	}
	return p
}

// Sum is the sum of non-negative terms, saturating at math.MaxInt64.
func Sum(xs ...int64) int64 {
	s := int64(0)
	for _, x := range xs {
		if x < 0 {
			x = 0
		}
		if s > math.MaxInt64-x {
			return math.MaxInt64
		}
		s += x
	}
	return s
}

// fallbackMemory is the limit where /proc/meminfo cannot be read (not
// Linux): 1 TiB, more than any single machine this zoo trains on, so that
// only the absurd is refused there.
const fallbackMemory = 1 << 40

// headroom is the share of available memory an estimate may take: the
// estimates are approximate, and the process needs memory besides.
const headroom = 0.9

// AvailableMemory is MemAvailable from /proc/meminfo in bytes: what the
// kernel can give without swapping. It is 0 when unknown.
func AvailableMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		var kb int64
		if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &kb); err == nil && kb > 0 {
			return Mul(kb, 1024)
		}
	}
	return 0
}

// memoryLimit is the number of bytes an estimate may need.
func memoryLimit() (limit, avail int64) {
	avail = AvailableMemory()
	if avail <= 0 {
		return fallbackMemory, 0
	}
	return int64(headroom * float64(avail)), avail
}

// gb formats bytes for a message.
func gb(b int64) string {
	if b == math.MaxInt64 {
		return "more bytes than int64 counts"
	}
	return fmt.Sprintf("about %.1f GB", float64(b)/1e9)
}

func availText(avail int64) string {
	if avail <= 0 {
		return fmt.Sprintf("the %.0f GB limit (MemAvailable unknown)", float64(fallbackMemory)/1e9)
	}
	return fmt.Sprintf("the %.1f GB available", float64(avail)/1e9)
}

// CheckMemory refuses need bytes if they would not fit in the machine's
// available memory (MemAvailable, less a 10% margin), with an error that
// says what needs them and what to lower, e.g.
// CheckMemory(b, "pretrain: batch_size 64 × block 1024", "lower batch_size").
// A need of math.MaxInt64 (an overflowed estimate) is always refused.
func CheckMemory(need int64, what, lower string) error {
	limit, avail := memoryLimit()
	if need == math.MaxInt64 || need > limit {
		return fmt.Errorf("%s needs %s, more than %s; %s", what, gb(need), availText(avail), lower)
	}
	return nil
}

// CheckParams refuses a model whose parameters would not fit in memory:
// the terms are its parameter count (and buffers) in elements, bytesPer
// the bytes of one element (4 for float32). The error names family, the
// count, and the largest term with the field to lower. It is what every
// family's New calls before allocating a parameter.
func CheckParams(family string, terms []Term, bytesPer int64) error {
	if len(terms) == 0 {
		return nil
	}
	n := int64(0)
	big := terms[0]
	for _, t := range terms {
		n = Sum(n, t.N)
		if t.N > big.N {
			big = t
		}
	}
	need := Mul(n, bytesPer)
	limit, avail := memoryLimit()
	if n < math.MaxInt64 && need <= limit {
		return nil
	}
	count := "more parameters than int64 counts"
	if n < math.MaxInt64 {
		count = fmt.Sprintf("%d parameters", n)
	}
	return fmt.Errorf("%s: the model's %s need %s, more than %s; most are %s: lower %s",
		family, count, gb(need), availText(avail), big.What, big.Lower)
}

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

// Count formats an element count for a message: the number, or "2^63 or
// more" for an overflowed (saturated) one.
func Count(n int64) string {
	if n == math.MaxInt64 {
		return "2^63 or more"
	}
	return fmt.Sprint(n)
}

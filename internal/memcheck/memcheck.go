// Package memcheck is the arithmetic of memory estimates and the check of
// an estimate against the machine's available memory: saturating products
// and sums of element counts, MemAvailable, and the errors that name what
// needs the memory and what to lower. It is a leaf: the model packages
// (through models.CheckParams and models.CheckMemory, in every family's New
// and Load) and the training engine (train's run estimate) both use it, so
// that train need not import models to check a run.
package memcheck

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

// Count formats an element count for a message: the number, or "2^63 or
// more" for an overflowed (saturated) one.
func Count(n int64) string {
	if n == math.MaxInt64 {
		return "2^63 or more"
	}
	return fmt.Sprint(n)
}

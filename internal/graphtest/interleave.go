package graphtest

import (
	"slices"
	"testing"
	"time"
)

// InterleaveBF16 times two versions of one step against each other, f32
// (float32 products) and bf (bf16 products): one warm-up run of each, then
// b.N iterations of one run of each, in alternating order, so that a
// shared machine's load falls on both alike. It reports each one's mean
// and least ms/step and the median of the iterations' ratios (f32 time /
// bf16 time), the steadiest numbers on a loaded machine.
func InterleaveBF16(b *testing.B, f32, bf func()) {
	f32()
	bf()
	var tf, tb time.Duration
	var ratios []float64
	minF, minB := time.Duration(1<<62), time.Duration(1<<62)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		first, second := f32, bf
		if i%2 == 1 {
			first, second = bf, f32
		}
		t0 := time.Now()
		first()
		t1 := time.Now()
		second()
		d1, d2 := t1.Sub(t0), time.Since(t1)
		df, db := d1, d2
		if i%2 == 1 {
			df, db = d2, d1
		}
		tf, tb = tf+df, tb+db
		minF, minB = min(minF, df), min(minB, db)
		ratios = append(ratios, float64(df)/float64(db))
	}
	slices.Sort(ratios)
	b.ReportMetric(float64(tf.Milliseconds())/float64(b.N), "ms/step-f32")
	b.ReportMetric(float64(tb.Milliseconds())/float64(b.N), "ms/step-bf16")
	b.ReportMetric(float64(minF.Milliseconds()), "min-ms-f32")
	b.ReportMetric(float64(minB.Milliseconds()), "min-ms-bf16")
	b.ReportMetric(ratios[len(ratios)/2], "median-speedup")
}

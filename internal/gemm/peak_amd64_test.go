//go:build amd64 && !purego

package gemm

import "testing"

// The loop does what it counts: 768 FLOPs an iteration, and its sum is
// the closed form of the repeated FMA (a test that can fail: change the
// loop's count or its registers and the value moves).
func TestFMAPeakLoop(t *testing.T) {
	if fmaPeak(1) == 0 {
		t.Skip("needs amd64 with AVX-512")
	}
	if got := fmaPeak(1000); got != 1000*768 {
		t.Fatalf("fmaPeak(1000) counted %v FLOPs, want %v", got, 1000*768)
	}
	// Each accumulator starts at 1e-7 and gains 1.0000001·1e-7 per
	// iteration; the result adds three of them.
	x := float32(1e-7)
	for i := 0; i < 100; i++ {
		x += float32(1.0000001) * float32(1e-7)
	}
	got := fmaPeakAVX512(100)
	if d := got - 3*x; d > 1e-9 || d < -1e-9 {
		t.Fatalf("fmaPeakAVX512(100) = %g, want %g", got, 3*x)
	}
}

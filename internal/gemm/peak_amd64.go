//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

//go:noescape
func fmaPeakAVX512(n int) float32

// fmaPeak runs n iterations of an FMA-bound loop that does no memory
// access (24 independent 512-bit FMAs an iteration) and returns the FLOPs
// it did, or 0 where the CPU lacks AVX-512. Only the peak benchmark uses it.
func fmaPeak(n int) (flops float64) {
	if !cpu.X86.HasAVX512F || n < 1 {
		return 0
	}
	_ = fmaPeakAVX512(n)
	return float64(n) * 24 * 16 * 2
}

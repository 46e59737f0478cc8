//go:build !amd64 || purego

package gemm

// fmaPeak is the FMA-bound loop of the peak benchmark, which needs AVX-512
// and amd64 assembly: elsewhere it does nothing and returns 0.
func fmaPeak(n int) float64 { return 0 }

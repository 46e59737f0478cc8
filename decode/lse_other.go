//go:build !amd64 || purego

package decode

// useAVX2 is false here: there is only the Go loop.
var useAVX2 = false

// sumExpFast is sumExp.
func sumExpFast(x []float64, hi float64) float64 { return sumExp(x, hi) }

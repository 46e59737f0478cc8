//go:build !amd64 || purego

package gemm

// useReducedAsm is always false here: the Go loops run.
var useReducedAsm = false

// rowsAsm is never called without the kernels.
func (r *Reduced) rowsAsm(y, xp []float32, i0, i1 int) { panic("gemm: no reduced-precision kernels") }

// reducedKernels are the Go loops only.
func reducedKernels() []string { return []string{"go"} }

// setReducedKernel has only the Go loops to select.
func setReducedKernel(string) (restore func()) { return func() {} }

// widenAsm does nothing here: Row widens in Go.
func (r *Reduced) widenAsm(int, []float32) int { return 0 }

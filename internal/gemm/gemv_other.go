//go:build !amd64 || purego

package gemm

// gemv reports false: without vector routines few-row products take the
// packed path.
func (jb *job) gemv() bool { return false }

// asmGemvAVX2 is always false here.
var asmGemvAVX2 = false

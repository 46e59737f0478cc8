//go:build !amd64 || purego

package gemm

// bf16Native is false here: the bf16 products run in Go.
var bf16Native = false

// bf16HalfRate is false here: there is no native bf16 path.
var bf16HalfRate = false

// activeBF16 is the kernel SgemmBF16 uses: the portable one.
var activeBF16 = bf16GoKernel

func bf16Kernels() []*kernel { return []*kernel{bf16GoKernel} }

// useBF16Asm is false here: there are only the Go rounding routines.
var useBF16Asm = false

func roundRow(dst []uint32, src []float32)    { roundRowGo(dst, src) }
func pairRows(dst []uint32, r0, r1 []float32) { pairRowsGo(dst, r0, r1) }

func pairPanels(dst, src []float32, ld, kb, w, n, ps int) { pairPanelsGo(dst, src, ld, kb, w, n, ps) }

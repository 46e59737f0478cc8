//go:build !amd64 || purego

package gemm

// asmPack is always false here: there are only the Go packing routines.
var asmPack = false

// asmTrans16AVX2 is always false here too.
var asmTrans16AVX2 = false

func packCopy(dst, src []float32, ld, kb, w, n, ps int) { packCopyGo(dst, src, ld, kb, w, n, ps) }
func packTrans(dst, src []float32, ld, kb, w, n, ps int) {
	packTransGo(dst, src, ld, kb, w, n, ps)
}

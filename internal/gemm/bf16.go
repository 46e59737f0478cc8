package gemm

import (
	"math"
	"unsafe"

	"github.com/d73a19ff/zoo/internal/parallel"
)

// Mixed-precision products: SgemmBF16 rounds op(A) and op(B) to bfloat16
// and accumulates their products in float32, as a bf16 matrix unit does
// (and as PyTorch's torch.autocast("cpu", dtype=torch.bfloat16) asks of
// its kernels). The rounding happens while the operands are packed for
// the kernel (bf16_pack.go): each step of a micro-panel holds 32-bit
// words, each a pair of bfloat16s of consecutive k (the low half the even
// k, the high half the odd one, zero past an odd k), which is the operand
// layout of the AVX-512 BF16 instruction VDPBF16PS. To the blocked driver
// (driver.go) the product is then an ordinary float32 one of half the
// depth: it is blocked and shared out among the cores by the same code,
// the packed words moved as float32 bits, never computed on. Only the
// packing and the micro-kernel differ: kernelBF16AVX512 (bf16_amd64.s),
// which adds both products of each pair into a float32 lane, or
// kernelBF16Go.
//
// The two ways round the same (roundBF16) and multiply the same: the
// product of two bfloat16s is exact in float32, and each lane adds the odd
// product, then the even one, each addition rounded to nearest even. Their
// results differ only in the order the k steps are summed (the tiles
// differ: 12×32 against 4×4) and in that VDPBF16PS flushes results
// below float32's normal range to zero.

// roundBF16 rounds f to the nearest bfloat16, ties to even, as
// VCVTNE2PS2BF16 does: zeros and float32 subnormals become a zero of the
// same sign, infinities stay, NaNs stay NaNs (quiet ones).
func roundBF16(f float32) uint16 {
	u := math.Float32bits(f)
	switch {
	case u&0x7f800000 == 0: // zero or subnormal
		return uint16(u>>16) & 0x8000
	case u&0x7fffffff > 0x7f800000: // NaN
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// RoundBF16 returns f rounded to the nearest bfloat16 (ties to even,
// subnormals to zero, as SgemmBF16 rounds its operands), widened back to
// float32: the value the bf16 product multiplies.
func RoundBF16(f float32) float32 { return math.Float32frombits(uint32(roundBF16(f)) << 16) }

// pairBF16 is the word holding lo (even k) and hi (odd k), rounded.
func pairBF16(lo, hi float32) uint32 {
	return uint32(roundBF16(lo)) | uint32(roundBF16(hi))<<16
}

// HasBF16 reports whether SgemmBF16 runs on the CPU's bf16 instructions
// (AVX-512 BF16). Elsewhere it runs in portable Go, correct but many
// times slower than Sgemm.
func HasBF16() bool { return bf16Native }

// BF16Slow reports a CPU whose native bf16 products are no faster than
// float32's (Intel's with AMX: VDPBF16PS issues at half the FMA rate), so
// that SgemmBF16 saves no time there.
func BF16Slow() bool { return bf16HalfRate }

// SgemmBF16 is Sgemm (same arguments, semantics and panics) with op(A) and
// op(B) rounded to bfloat16 (RoundBF16) and their products summed in
// float32: C = alpha·bf16(op(A))·bf16(op(B)) + beta·C. alpha, beta and C
// stay float32. It is safe for concurrent use, as Sgemm is.
func SgemmBF16(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	check(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if alpha == 0 || k == 0 {
		scale(m, n, beta, c, ldc)
		return
	}
	sgemmBF16(activeBF16, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmBF16Bias is SgemmBias (same arguments, semantics and panics) with
// op(A) and op(B) rounded to bfloat16 as SgemmBF16 rounds them: C =
// bf16(op(A))·bf16(op(B)) + 1·biasᵀ, bias (n floats) added to every row
// of C inside the product, tile by tile, as a linear layer's forward pass
// needs. The result is bit for bit that of copying bias into every row of
// C and calling SgemmBF16 with alpha 1 and beta 1. It is safe for
// concurrent use.
func SgemmBF16Bias(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, bias []float32, c []float32, ldc int) {
	checkBias(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc, len(bias))
	if m == 0 || n == 0 {
		return
	}
	jb := bf16Job(activeBF16, tA, tB, m, n, k, 1, a, lda, b, ldb, 1, c, ldc)
	if k == 0 {
		biasRows(c, ldc, m, bias[:n])
		return
	}
	jb.bias = bias[:n]
	jb.runBF16()
}

// sgemmBF16 is SgemmBF16 through kern (tests pick the Go one).
func sgemmBF16(kern *kernel, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	jb := bf16Job(kern, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	jb.runBF16()
}

// preRoundB is how many times the driver must pack op(B) before
// runBF16 rounds B once beforehand instead of at each packing (0: never).
var preRoundB = 3

// runBF16 runs a bf16 job. op(A) is rounded as it is packed: the driver
// packs each of its blocks once. op(B) is packed once per block of rows
// of C that each goroutine computes, so where that is more than once
// (preRoundB) B is first rounded into a word matrix of its own, shared by
// the goroutines and packed as floats. The words are the same either way.
func (jb *job) runBF16() {
	if preRoundB > 0 && jb.packsOfB() >= preRoundB {
		bufs := getPairBuffers()
		defer putPairBuffers(bufs)
		kp := jb.k
		if jb.tB {
			pb := aligned(&bufs.b, jb.n*kp)
			roundMatrix(pb, jb.b, jb.ldb, jb.n, jb.kf)
			jb.b, jb.ldb = pb, kp
		} else {
			pb := aligned(&bufs.b, kp*jb.n)
			pairMatrix(pb, jb.b, jb.ldb, jb.kf, jb.n)
			jb.b, jb.ldb = pb, jb.n
		}
		jb.bWords = true
	}
	jb.parallel()
}

// packsOfB is how many times the driver packs each block of op(B): once
// per block of blockM rows of each band of rows of C that shares it.
func (jb *job) packsOfB() int {
	pr, _ := jb.split()
	mc := roundUp(blockM, jb.kern.mr)
	units := (jb.m + jb.kern.mr - 1) / jb.kern.mr
	rows := (units + pr - 1) / pr * jb.kern.mr // the largest band
	return pr * ((rows + mc - 1) / mc)
}

// bf16Job is the blocked driver's job for a bf16 product: a and b stay
// float32 and are rounded as they are packed (bf16_pack.go), the driver
// blocking and sharing out ⌈k/2⌉ steps of pairs.
func bf16Job(kern *kernel, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) job {
	return job{tA: tA, tB: tB, m: m, n: n, k: (k + 1) / 2, alpha: alpha, beta: beta,
		a: a, b: b, c: c, lda: lda, ldb: ldb, ldc: ldc, kern: kern, bf16: true, kf: k}
}

// pairBuffers holds a product's word matrices (runBF16's rounded B; the
// two-pass reference in the tests rounds A into a too).
type pairBuffers struct{ a, b []float32 }

var freePairs = make(chan *pairBuffers, 4)

func getPairBuffers() *pairBuffers {
	select {
	case b := <-freePairs:
		return b
	default:
		return new(pairBuffers)
	}
}

func putPairBuffers(b *pairBuffers) {
	select {
	case freePairs <- b:
	default:
	}
}

// roundWork is the floats from which the rounding is shared out among
// the cores (two at most: it is a pass over memory).
const roundWork = 1 << 16

// roundMatrix writes the word matrix of rows×k matrix src (row stride ld,
// k contiguous): dst row i, kp = ⌈k/2⌉ words, holds row i's pairs.
func roundMatrix(dst, src []float32, ld, rows, k int) {
	kp := (k + 1) / 2
	split(rows, rows*k, func(lo, hi int) {
		w := words(dst)
		for i := lo; i < hi; i++ {
			roundRow(w[i*kp:][:kp], src[i*ld:][:k])
		}
	})
}

// pairMatrix writes the word matrix of k×cols matrix src (row stride ld,
// k strided): dst row p, cols words, holds rows 2p and 2p+1 interleaved
// (row 2p+1 zero past an odd k).
func pairMatrix(dst, src []float32, ld, k, cols int) {
	kp := (k + 1) / 2
	split(kp, k*cols, func(lo, hi int) {
		w := words(dst)
		for p := lo; p < hi; p++ {
			r0 := src[2*p*ld:][:cols]
			var r1 []float32
			if 2*p+1 < k {
				r1 = src[(2*p+1)*ld:][:cols]
			}
			pairRows(w[p*cols:][:cols], r0, r1)
		}
	})
}

// split runs f over [0, n) on two goroutines when work is large enough.
func split(n, work int, f func(lo, hi int)) {
	if work < roundWork || n < 2 {
		f(0, n)
		return
	}
	parallel.Run(2, func(i int) { f(n*i/2, n*(i+1)/2) })
}

// words views a float32 slice as the uint32 words it holds.
func words(s []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// roundRowGo is roundRow in Go: dst[j] = pair(src[2j], src[2j+1]), the
// last high half zero when len(src) is odd.
func roundRowGo(dst []uint32, src []float32) {
	n := len(src) / 2
	for j := range n {
		dst[j] = pairBF16(src[2*j], src[2*j+1])
	}
	if len(src)%2 == 1 {
		dst[n] = uint32(roundBF16(src[2*n]))
	}
}

// pairRowsGo is pairRows in Go: dst[j] = pair(r0[j], r1[j]), r1 nil
// meaning zeros.
func pairRowsGo(dst []uint32, r0, r1 []float32) {
	if r1 == nil {
		for j, v := range r0 {
			dst[j] = uint32(roundBF16(v))
		}
		return
	}
	r1 = r1[:len(r0)]
	for j, v := range r0 {
		dst[j] = pairBF16(v, r1[j])
	}
}

// bf16GoKernel is the portable 4×4 kernel over word panels.
var bf16GoKernel = &kernel{name: "bf16-go", mr: 4, nr: 4, fn: kernelBF16Go}

// kernelBF16Go is kernelGo over k steps of pairs: a step of A is 4 words
// (the rows' pairs), of B 4 words (the columns'); each of the 16 sums
// adds the odd product, then the even one, as VDPBF16PS does. Both
// products are exact in float32 (8-bit significands), so only the
// additions round.
func kernelBF16Go(k int, a, b, c *float32, ldc int, alpha, beta float32) {
	as := unsafe.Slice((*uint32)(unsafe.Pointer(a)), 4*k)
	bs := unsafe.Slice((*uint32)(unsafe.Pointer(b)), 4*k)
	var acc [4][4]float32
	for p := 0; p < k; p++ {
		ap := as[4*p : 4*p+4 : 4*p+4]
		bp := bs[4*p : 4*p+4 : 4*p+4]
		var blo, bhi [4]float32
		for j, w := range bp {
			blo[j] = math.Float32frombits(w << 16)
			bhi[j] = math.Float32frombits(w &^ 0xffff)
		}
		for i, w := range ap {
			alo := math.Float32frombits(w << 16)
			ahi := math.Float32frombits(w &^ 0xffff)
			row := &acc[i]
			for j := range row {
				s := row[j] + ahi*bhi[j]
				row[j] = s + alo*blo[j]
			}
		}
	}
	cs := unsafe.Slice(c, 3*ldc+4)
	for i := range acc {
		r := acc[i]
		storeRow(cs[i*ldc:i*ldc+4:i*ldc+4], alpha, beta, r[0], r[1], r[2], r[3])
	}
}

package gemm

import "unsafe"

// A kernel computes one mr×nr tile of C from packed micro-panels:
//
//	C = alpha·A·B + beta·C
//
// where a holds k steps of mr floats (a column of the A micro-panel per step),
// b holds k steps of nr floats (a row of the B micro-panel per step) and c is
// row-major with row stride ldc. beta == 0 means C is written without being
// read, so NaNs in it do not propagate.
type kernel struct {
	name   string
	mr, nr int
	fn     func(k int, a, b, c *float32, ldc int, alpha, beta float32)
	// rows, when set, is fn with A read in place from mr rows of a
	// row-major matrix (element (i, p) at a[i*lda+p]) instead of a packed
	// micro-panel: products with an untransposed A skip packing it.
	rows func(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32)
	// cols, when set, is rows for a transposed A: op(A) = Aᵀ read in
	// place, element (i, p) at a[p*lda+i].
	cols func(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32)
}

// goKernel is the portable 4×4 kernel in plain Go, used where no assembly
// kernel applies.
var goKernel = &kernel{name: "go", mr: 4, nr: 4, fn: kernelGo}

// kernelGo is the mr = nr = 4 kernel in plain Go: sixteen scalar
// accumulators, one rank-1 update per k step.
func kernelGo(k int, a, b, c *float32, ldc int, alpha, beta float32) {
	as := unsafe.Slice(a, 4*k)
	bs := unsafe.Slice(b, 4*k)
	var c00, c01, c02, c03, c10, c11, c12, c13 float32
	var c20, c21, c22, c23, c30, c31, c32, c33 float32
	for p := 0; p < k; p++ {
		ap := as[4*p : 4*p+4 : 4*p+4]
		bp := bs[4*p : 4*p+4 : 4*p+4]
		a0, a1, a2, a3 := ap[0], ap[1], ap[2], ap[3]
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	cs := unsafe.Slice(c, 3*ldc+4)
	storeRow(cs[0:4:4], alpha, beta, c00, c01, c02, c03)
	storeRow(cs[ldc:ldc+4:ldc+4], alpha, beta, c10, c11, c12, c13)
	storeRow(cs[2*ldc:2*ldc+4:2*ldc+4], alpha, beta, c20, c21, c22, c23)
	storeRow(cs[3*ldc:3*ldc+4:3*ldc+4], alpha, beta, c30, c31, c32, c33)
}

// storeRow sets row = alpha·(x0, x1, x2, x3) + beta·row, not reading row if
// beta == 0.
func storeRow(row []float32, alpha, beta, x0, x1, x2, x3 float32) {
	x0, x1, x2, x3 = alpha*x0, alpha*x1, alpha*x2, alpha*x3
	if beta != 0 {
		x0 += beta * row[0]
		x1 += beta * row[1]
		x2 += beta * row[2]
		x3 += beta * row[3]
	}
	row[0], row[1], row[2], row[3] = x0, x1, x2, x3
}

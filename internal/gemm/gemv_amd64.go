//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

// gemvNAVX512 sets c[j] = Σ_p x[p]·b[p*ldb+j] + beta·c[j] for j < n (c is
// not read when beta is zero); tail is lanes(n%16).
//
//go:noescape
func gemvNAVX512(k, n int, x, b *float32, ldb int, c *float32, beta float32, tail uint32)

// gemvTAVX512 sets c[j] = Σ_p x[p]·b[j*ldb+p] + beta·c[j] for j < n (c is
// not read when beta is zero); tail is lanes(k%16).
//
//go:noescape
func gemvTAVX512(k, n int, x, b *float32, ldb int, c *float32, beta float32, tail uint32)

// gemvNAVX2 sets c[j] = Σ_p x[p]·b[p*ldb+j] + beta·c[j] for j < n, n a
// multiple of 8 (c is not read when beta is zero).
//
//go:noescape
func gemvNAVX2(k, n int, x, b *float32, ldb int, c *float32, beta float32)

// gemvTAVX2 sets c[j] = Σ_{p<k} x[p]·b[j*ldb+p] + beta·c[j] for j < n, k a
// multiple of 8 (c is not read when beta is zero).
//
//go:noescape
func gemvTAVX2(k, n int, x, b *float32, ldb int, c *float32, beta float32)

// asmGemvAVX2 selects the AVX2 vector-matrix products where the AVX-512
// ones are missing; tests clear asmPack to check them on AVX-512 machines.
var asmGemvAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// gemv computes a product with few rows (m ≤ gemvRows) one row of C at a
// time, each as a vector-matrix product that reads B without packing it:
// with so few rows of op(A), packed tiles would be mostly padding and B
// would be packed for a single use (for a GPT's generation step, packing
// the weights took three times the products). It runs on the calling
// goroutine: the products stream B from memory once, and sharing B's
// columns between two cores measured no faster (1×768×50257, 15 GB/s
// either way) or slower (1×256×1024, 34 GB/s against 55). It reports false
// when the CPU has neither AVX-512 nor AVX2 with FMA.
func (jb *job) gemv() bool {
	if !asmPack && !asmGemvAVX2 {
		return false
	}
	k, m := jb.k, jb.m
	xs, ldx := jb.a, jb.lda
	if jb.tA || jb.alpha != 1 { // gather alpha·op(A) into contiguous rows
		bufs := getBuffers()
		defer putBuffers(bufs)
		x := aligned(&bufs.tile, m*k)
		for i := 0; i < m; i++ {
			for p := 0; p < k; p++ {
				if jb.tA {
					x[i*k+p] = jb.alpha * jb.a[p*jb.lda+i]
				} else {
					x[i*k+p] = jb.alpha * jb.a[i*jb.lda+p]
				}
			}
		}
		xs, ldx = x, k
	}
	jb.gemvCols(xs, ldx, 0, jb.n)
	return true
}

// gemvCols computes columns [j0, j1) of every row of C from the rows of
// alpha·op(A) in xs (row stride ldx).
func (jb *job) gemvCols(xs []float32, ldx, j0, j1 int) {
	k, nn, ldb := jb.k, j1-j0, jb.ldb
	for i := 0; i < jb.m; i++ {
		x := xs[i*ldx:][:k]
		c := jb.c[i*jb.ldc+j0 : i*jb.ldc+j1]
		switch {
		case asmPack && jb.tB:
			b := jb.b[j0*ldb:]
			_ = b[(nn-1)*ldb+k-1]
			gemvTAVX512(k, nn, &x[0], &b[0], ldb, &c[0], jb.beta, lanes(k%16))
		case asmPack:
			b := jb.b[j0:]
			_ = b[(k-1)*ldb+nn-1]
			gemvNAVX512(k, nn, &x[0], &b[0], ldb, &c[0], jb.beta, lanes(nn%16))
		case jb.tB:
			gemvTAVX2Tail(x, jb.b[j0*ldb:], ldb, c, jb.beta)
		default:
			gemvNAVX2Tail(x, jb.b[j0:], ldb, c, jb.beta)
		}
	}
}

// gemvTAVX2Tail is c[j] = x·b[j*ldb:][:k] + beta·c[j] for j < len(c), k =
// len(x): gemvTAVX2 over the first multiple of 8 of k, the rest here.
func gemvTAVX2Tail(x, b []float32, ldb int, c []float32, beta float32) {
	k, n := len(x), len(c)
	_ = b[(n-1)*ldb+k-1]
	k8 := k &^ 7
	gemvTAVX2(k8, n, &x[0], &b[0], ldb, &c[0], beta)
	if k8 == k {
		return
	}
	for j := range c {
		row := b[j*ldb+k8 : j*ldb+k]
		var s float32
		for p, v := range row {
			s += x[k8+p] * v
		}
		c[j] += s
	}
}

// gemvNAVX2Tail is c[j] = Σ_p x[p]·b[p*ldb+j] + beta·c[j] for j < len(c),
// p < len(x): gemvNAVX2 over the first multiple of 8 of the columns, the
// rest here.
func gemvNAVX2Tail(x, b []float32, ldb int, c []float32, beta float32) {
	k, n := len(x), len(c)
	_ = b[(k-1)*ldb+n-1]
	n8 := n &^ 7
	if n8 > 0 {
		gemvNAVX2(k, n8, &x[0], &b[0], ldb, &c[0], beta)
	}
	for j := n8; j < n; j++ {
		var s float32
		for p, v := range x {
			s += v * b[p*ldb+j]
		}
		if beta != 0 {
			s += beta * c[j]
		}
		c[j] = s
	}
}

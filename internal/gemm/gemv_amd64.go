//go:build amd64 && !purego

package gemm

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

// gemv computes a product with few rows (m ≤ gemvRows) one row of C at a
// time, each as a vector-matrix product that reads B without packing it:
// with so few rows of op(A), packed tiles would be mostly padding and B
// would be packed for a single use. It reports false when the CPU has no
// AVX-512.
func (jb *job) gemv() bool {
	if !asmPack {
		return false
	}
	k, n := jb.k, jb.n
	var bufs *buffers
	if jb.tA || jb.alpha != 1 {
		bufs = getBuffers()
		defer putBuffers(bufs)
	}
	for i := 0; i < jb.m; i++ {
		var x []float32
		if bufs == nil {
			x = jb.a[i*jb.lda:][:k]
		} else { // gather alpha·(row i of op(A)) into a contiguous row
			x = aligned(&bufs.tile, k)
			for p := range x {
				if jb.tA {
					x[p] = jb.alpha * jb.a[p*jb.lda+i]
				} else {
					x[p] = jb.alpha * jb.a[i*jb.lda+p]
				}
			}
		}
		c := jb.c[i*jb.ldc:][:n]
		if jb.tB {
			_ = jb.b[(n-1)*jb.ldb+k-1]
			gemvTAVX512(k, n, &x[0], &jb.b[0], jb.ldb, &c[0], jb.beta, lanes(k%16))
		} else {
			_ = jb.b[(k-1)*jb.ldb+n-1]
			gemvNAVX512(k, n, &x[0], &jb.b[0], jb.ldb, &c[0], jb.beta, lanes(n%16))
		}
	}
	return true
}

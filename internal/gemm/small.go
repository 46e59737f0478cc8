package gemm

// small computes C without packing, one row of C at a time, for products
// too small to amortise packing.
func (jb *job) small() {
	for i := 0; i < jb.m; i++ {
		crow := jb.c[i*jb.ldc:][:jb.n]
		switch jb.beta {
		case 0:
			clear(crow)
		case 1:
		default:
			for j := range crow {
				crow[j] *= jb.beta
			}
		}
		for p := 0; p < jb.k; p++ {
			var aip float32
			if jb.tA {
				aip = jb.a[p*jb.lda+i]
			} else {
				aip = jb.a[i*jb.lda+p]
			}
			aip *= jb.alpha
			if jb.tB {
				for j := range crow {
					crow[j] += aip * jb.b[j*jb.ldb+p]
				}
				continue
			}
			for j, v := range jb.b[p*jb.ldb:][:jb.n] {
				crow[j] += aip * v
			}
		}
	}
}

package ops

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/d73a19ff/zoo/internal/parallel"
)

// The kernels of Attention (flash.go). Dao 2023's Algorithm 1 (forward) and
// Algorithm 2 (backward), on tiles of flashBlockQ query rows by flashBlockK
// keys: the tile products go through gemm (internal/gemm for float32), the
// row work through the vec.go primitives the fused softmax uses (float32)
// or plain loops (float64). Each worker holds two tiles; nothing of size
// Tq×Tk is ever allocated.

// Tile sizes: query rows per block (Br) and keys per tile (Bc), of the
// forward and of the backward pass. Variables so that tests can make them
// small and odd.
var (
	flashBlockQ, flashBlockK       = 128, 128
	flashBwdBlockQ, flashBwdBlockK = 128, 128
)

// flashBackwardMode chooses the work split of the backward pass: 0 picks
// by size (flashSplit), 1 forces one unit per head, 2 the split into key
// blocks then query blocks. Both give bit-identical results; tests set it.
var flashBackwardMode = 0

// flashShape is one problem: q (n, tq, d), k (n/group, tk, d), v
// (n/group, tk, dv), heads rows of q per mask row, group rows of q per row
// of k and v (grouped-query attention; 0 or 1 for none).
type flashShape struct {
	n, tq, tk, d, dv int
	heads, group     int
	scale            float64
	causal           bool
	offset           int
	bf16             bool // float32 tile products in bfloat16 (UseBF16)
}

// limit is how many leading keys query i sees when only the first end keys
// survive the mask: end, cut to i + offset + 1 under the causal mask.
func (p *flashShape) limit(i, end int) int {
	if !p.causal || p.offset >= end-i-1 { // the comparison cannot overflow
		return end
	}
	return max(0, i+p.offset+1)
}

// flashMaskEnd is one past the last key that mask row of head z keeps (0
// when it keeps none), or tk without a mask: no query of the head reads a
// key beyond it. For a KV cache this is the number of occupied slots.
func flashMaskEnd[T Float](mask []T, p *flashShape, z int) int {
	if mask == nil {
		return p.tk
	}
	m := mask[z/p.heads*p.tk:][:p.tk]
	for j := len(m) - 1; j >= 0; j-- {
		if m[j] != 0 {
			return j + 1
		}
	}
	return 0
}

// flashHead is one head's slices of the inputs and outputs.
type flashHead[T Float] struct {
	q, k, v, o, do []T
	dq, dk, dv     []T
	m              []T       // mask row, nil without a mask
	lse            []float64 // per query row, +Inf for a row that sees no key
	dd             []T       // D = rowsum(dO ⊙ O) per query row
	end            int       // flashMaskEnd
	kEnd           int       // keys the head's last query sees: no query sees more
}

func flashHeadOf[T Float](q, k, v, mask []T, p *flashShape, z int) flashHead[T] {
	kz := z // the key-value head query head z reads
	if p.group > 1 {
		kz = z / p.group
	}
	h := flashHead[T]{
		q: q[z*p.tq*p.d:][:p.tq*p.d],
		k: k[kz*p.tk*p.d:][:p.tk*p.d],
		v: v[kz*p.tk*p.dv:][:p.tk*p.dv],
	}
	if mask != nil {
		h.m = mask[z/p.heads*p.tk:][:p.tk]
	}
	h.end = flashMaskEnd(mask, p, z)
	if p.tq > 0 {
		h.kEnd = p.limit(p.tq-1, h.end)
	}
	return h
}

// flashScratch is one worker's space: two tiles and per-row state.
type flashScratch[T Float] struct {
	s, t []T       // Br×Bc tiles: scores/probabilities, and dP/dS
	m, l []float64 // running max and sum of a query block's rows
	lim  []int     // keys each row of a query block sees
}

var flashPools [2]sync.Pool // float32, float64 scratch

func flashPool[T Float]() *sync.Pool {
	var z T
	if _, ok := any(z).(float32); ok {
		return &flashPools[0]
	}
	return &flashPools[1]
}

func getFlashScratch[T Float](bq, bk int) *flashScratch[T] {
	sc, _ := flashPool[T]().Get().(*flashScratch[T])
	if sc == nil {
		sc = new(flashScratch[T])
	}
	if cap(sc.s) < bq*bk {
		sc.s, sc.t = make([]T, bq*bk), make([]T, bq*bk)
	}
	if cap(sc.m) < bq {
		sc.m, sc.l, sc.lim = make([]float64, bq), make([]float64, bq), make([]int, bq)
	}
	return sc
}

func putFlashScratch[T Float](sc *flashScratch[T]) { flashPool[T]().Put(sc) }

// parallelUnits runs work on up to GOMAXPROCS goroutines, the caller's
// included, which take the units [0, n) one at a time, in order, through
// claim: units of unequal cost (causal query blocks) balance, and each
// goroutine sets up its scratch once. cost is the work per unit in
// elements, as for parallel.For. The result must not depend on which
// goroutine runs a unit.
func parallelUnits(n, cost int, work func(claim func() (int, bool))) {
	workers := min(runtime.GOMAXPROCS(0), n, n*max(cost, 1)/parallel.MinWork)
	if workers <= 1 {
		next := 0
		work(func() (int, bool) {
			next++
			return next - 1, next <= n
		})
		return
	}
	var next atomic.Int64
	claim := func() (int, bool) {
		u := int(next.Add(1)) - 1
		return u, u < n
	}
	parallel.Run(workers, func(int) { work(claim) })
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// flashForward is Algorithm 1 of Dao 2023: for each (head, block of query
// rows), loop over the key tiles the block sees, keeping per row the
// running max m and sum ℓ of exp(scale·s − m); each tile rescales the
// accumulated context by exp(m_old − m_new) and adds P·V; the context is
// divided by ℓ once at the end. lse, when not nil, gets m + log ℓ per row.
func flashForward[T Float](q, k, v, mask, out []T, lse []float64, p flashShape) {
	if p.n == 0 || p.tq == 0 {
		return
	}
	bq := min(flashBlockQ, p.tq)
	nqb := ceilDiv(p.tq, bq)
	keys := 0 // the most keys a head reads, for the cost estimate
	for z := 0; z < p.n; z += p.heads {
		keys = max(keys, flashMaskEnd(mask, &p, z))
	}
	parallelUnits(p.n*nqb, bq*keys*(p.d+p.dv), func(claim func() (int, bool)) {
		sc := getFlashScratch[T](bq, flashBlockK)
		defer putFlashScratch(sc)
		for u, ok := claim(); ok; u, ok = claim() {
			// Last query blocks first: under a causal mask they see the most keys.
			qb, z := nqb-1-u/p.n, u%p.n
			h := flashHeadOf(q, k, v, mask, &p, z)
			o := out[z*p.tq*p.dv:][:p.tq*p.dv]
			var l []float64
			if lse != nil {
				l = lse[z*p.tq:][:p.tq]
			}
			flashForwardBlock(&h, o, l, qb*bq, min((qb+1)*bq, p.tq), &p, sc)
		}
	})
}

// flashForwardBlock computes the context rows [i0, i1) of head h into out
// (the head's (tq, dv) rows) and their log-sum-exp into lse (if not nil).
func flashForwardBlock[T Float](h *flashHead[T], out []T, lse []float64, i0, i1 int, p *flashShape, sc *flashScratch[T]) {
	br, d, dv := i1-i0, p.d, p.dv
	qb, ob := h.q[i0*d:i1*d], out[i0*dv:i1*dv]
	clear(ob)
	mx, l, lim := sc.m[:br], sc.l[:br], sc.lim[:br]
	for r := range br {
		mx[r], l[r], lim[r] = math.Inf(-1), 0, p.limit(i0+r, h.end)
	}
	kEnd := lim[br-1] // the block's last row sees the most keys
	for j0 := 0; j0 < kEnd; j0 += flashBlockK {
		kn := min(flashBlockK, kEnd-j0)
		s := sc.s[:br*kn]
		gemmAs(p.bf16, false, true, br, kn, d, qb, h.k[j0*d:(j0+kn)*d], 0, s) // S = Q_i K_jᵀ
		for r := range br {
			row := s[r*kn : (r+1)*kn]
			vis := min(max(lim[r]-j0, 0), kn)
			var mr []T
			if h.m != nil {
				mr = h.m[j0 : j0+vis]
			}
			tileMax := math.Inf(-1)
			if vis > 0 {
				tileMax = flashMaxScaled(row[:vis], mr, p.scale)
			}
			if math.IsInf(tileMax, -1) { // nothing visible in this tile
				clear(row)
				continue
			}
			old := mx[r]
			mNew := max(old, tileMax)
			sum := flashExpShift(row[:vis], mr, row[:vis], p.scale, mNew)
			clear(row[vis:])
			if mNew > old && l[r] != 0 { // rescale what earlier tiles added
				a := math.Exp(old - mNew)
				l[r] *= a
				flashScale(ob[r*dv:(r+1)*dv], a)
			}
			mx[r] = mNew
			l[r] += sum
		}
		gemmAs(p.bf16, false, false, br, dv, kn, s, h.v[j0*dv:(j0+kn)*dv], 1, ob) // O_i += P V_j
	}
	for r := range br {
		if l[r] == 0 { // the row sees no key: its context stays zero
			if lse != nil {
				lse[i0+r] = math.Inf(1)
			}
			continue
		}
		flashScale(ob[r*dv:(r+1)*dv], 1/l[r])
		if lse != nil {
			lse[i0+r] = mx[r] + math.Log(l[r])
		}
	}
}

// flashBackward is Algorithm 2 of Dao 2023 writing dq, dk, dv and D into
// packed (see flashGradOp), which must be zero. Per tile it recomputes
// P = exp(scale·Q Kᵀ − LSE) and adds dV += Pᵀ dO, dK += dSᵀ Q and
// dQ += dS K with dS = scale·P ⊙ (dO Vᵀ − D): the scale is folded into dS.
//
// The work is split one of two ways (flashSplit), which give bit-identical
// results because each tile and each sum runs in the same order either way:
// one unit per head, looping over key blocks and then query blocks, with dQ
// accumulated in place; or, when there are too few heads to keep the cores
// busy, one unit per (head, key block) for dK and dV, then one per (head,
// query block) for dQ, which recomputes the tiles (7 tile products per tile
// instead of 5) but never has two workers add into the same row.
func flashBackward[T Float](q, k, v, o, do, mask []T, lse []float64, packed []T, p flashShape) {
	nq, nk, nv := p.n*p.tq*p.d, p.n*p.tk*p.d, p.n*p.tk*p.dv
	dq, dk, dv, dd := packed[:nq], packed[nq:nq+nk], packed[nq+nk:nq+nk+nv], packed[nq+nk+nv:]
	if p.n == 0 || p.tq == 0 || p.tk == 0 {
		return
	}
	parallel.For(p.n*p.tq, 2*p.dv, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			dd[r] = T(flashDot(do[r*p.dv:(r+1)*p.dv], o[r*p.dv:(r+1)*p.dv]))
		}
	})
	head := func(z int) flashHead[T] {
		h := flashHeadOf(q, k, v, mask, &p, z)
		h.o, h.do = o[z*p.tq*p.dv:][:p.tq*p.dv], do[z*p.tq*p.dv:][:p.tq*p.dv]
		h.dq, h.dk, h.dv = dq[z*p.tq*p.d:][:p.tq*p.d], dk[z*p.tk*p.d:][:p.tk*p.d], dv[z*p.tk*p.dv:][:p.tk*p.dv]
		h.lse, h.dd = lse[z*p.tq:][:p.tq], dd[z*p.tq:][:p.tq]
		return h
	}
	bq, bk := min(flashBwdBlockQ, p.tq), min(flashBwdBlockK, p.tk)
	nqb, nkb := ceilDiv(p.tq, bq), ceilDiv(p.tk, bk)
	headCost := p.tq * p.tk * 2 * (p.d + p.dv)
	split := flashBackwardMode == 2 || flashBackwardMode == 0 && flashSplit(p.n, headCost)
	if !split {
		parallelUnits(p.n, headCost, func(claim func() (int, bool)) {
			sc := getFlashScratch[T](bq, bk)
			defer putFlashScratch(sc)
			for z, ok := claim(); ok; z, ok = claim() {
				h := head(z)
				for kb := range nkb {
					flashBackwardKV(&h, kb*bk, bq, bk, true, &p, sc)
				}
			}
		})
		return
	}
	parallelUnits(p.n*nkb, headCost/nkb, func(claim func() (int, bool)) {
		sc := getFlashScratch[T](bq, bk)
		defer putFlashScratch(sc)
		for u, ok := claim(); ok; u, ok = claim() {
			h := head(u / nkb)
			flashBackwardKV(&h, u%nkb*bk, bq, bk, false, &p, sc)
		}
	})
	parallelUnits(p.n*nqb, headCost/nqb, func(claim func() (int, bool)) {
		sc := getFlashScratch[T](bq, bk)
		defer putFlashScratch(sc)
		for u, ok := claim(); ok; u, ok = claim() {
			// Last query blocks first: under a causal mask they see the most keys.
			qb, z := nqb-1-u/p.n, u%p.n
			h := head(z)
			flashBackwardQ(&h, qb*bq, min((qb+1)*bq, p.tq), bk, &p, sc)
		}
	})
}

// flashSplit reports whether n heads, as one unit each, would leave the
// cores the work can use idle a quarter of the time or more, so that the
// backward pass should split heads into blocks, which costs 7/5 of the tile
// products.
func flashSplit(n, headCost int) bool {
	w := min(runtime.GOMAXPROCS(0), n*max(headCost, 1)/parallel.MinWork)
	if w <= 1 || n >= 4*w {
		return false
	}
	return 4*n < 3*w*ceilDiv(n, w) // n/(w·⌈n/w⌉) of the cores busy on average
}

// flashBackwardKV adds the contributions of key tile [j0, j0+Bc) to dK and
// dV (and, with withDQ, to dQ) over every query block that sees the tile,
// in increasing order.
func flashBackwardKV[T Float](h *flashHead[T], j0, bq, bk int, withDQ bool, p *flashShape, sc *flashScratch[T]) {
	if j0 >= h.kEnd {
		return
	}
	kn, d, dv := min(bk, h.kEnd-j0), p.d, p.dv
	first := 0 // the first query that sees key j0
	if p.causal {
		first = max(0, j0-p.offset) // kEnd > 0 implies offset > −tq: no overflow
	}
	for i0 := first / bq * bq; i0 < p.tq; i0 += bq {
		i1 := min(i0+bq, p.tq)
		pt, ds := flashTile(h, i0, i1, j0, kn, p, sc)
		br := i1 - i0
		gemmAs(p.bf16, true, false, kn, dv, br, pt, h.do[i0*dv:i1*dv], 1, h.dv[j0*dv:(j0+kn)*dv]) // dV_j += P_ijᵀ dO_i
		gemmAs(p.bf16, true, false, kn, d, br, ds, h.q[i0*d:i1*d], 1, h.dk[j0*d:(j0+kn)*d])       // dK_j += dS_ijᵀ Q_i
		if withDQ {
			gemmAs(p.bf16, false, false, br, d, kn, ds, h.k[j0*d:(j0+kn)*d], 1, h.dq[i0*d:i1*d]) // dQ_i += dS_ij K_j
		}
	}
}

// flashBackwardQ adds to dQ of query rows [i0, i1) the contributions of
// every key tile they see, in increasing order.
func flashBackwardQ[T Float](h *flashHead[T], i0, i1, bk int, p *flashShape, sc *flashScratch[T]) {
	lim, br, d := p.limit(i1-1, h.end), i1-i0, p.d
	for j0 := 0; j0 < lim; j0 += bk {
		kn := min(bk, h.kEnd-j0) // the tile flashBackwardKV computes
		_, ds := flashTile(h, i0, i1, j0, kn, p, sc)
		gemmAs(p.bf16, false, false, br, d, kn, ds, h.k[j0*d:(j0+kn)*d], 1, h.dq[i0*d:i1*d])
	}
}

// flashTile recomputes the tile of query rows [i0, i1) and keys
// [j0, j0+kn): P = exp(scale·Q Kᵀ − LSE) where visible and 0 elsewhere, and
// dS = scale·P ⊙ (dO Vᵀ − D), both (i1−i0, kn) in the worker's scratch.
func flashTile[T Float](h *flashHead[T], i0, i1, j0, kn int, p *flashShape, sc *flashScratch[T]) (pt, ds []T) {
	br, d, dv := i1-i0, p.d, p.dv
	pt, ds = sc.s[:br*kn], sc.t[:br*kn]
	gemmAs(p.bf16, false, true, br, kn, d, h.q[i0*d:i1*d], h.k[j0*d:(j0+kn)*d], 0, pt)       // S
	gemmAs(p.bf16, false, true, br, kn, dv, h.do[i0*dv:i1*dv], h.v[j0*dv:(j0+kn)*dv], 0, ds) // dP
	for r := range br {
		i := i0 + r
		prow, drow := pt[r*kn:(r+1)*kn], ds[r*kn:(r+1)*kn]
		vis := min(max(p.limit(i, h.end)-j0, 0), kn)
		if vis == 0 || math.IsInf(h.lse[i], 1) {
			clear(prow)
			clear(drow)
			continue
		}
		var mr []T
		if h.m != nil {
			mr = h.m[j0 : j0+vis]
		}
		flashExpShift(prow[:vis], mr, prow[:vis], p.scale, h.lse[i])
		flashDS(prow[:vis], drow[:vis], drow[:vis], p.scale, float64(h.dd[i]))
		clear(prow[vis:])
		clear(drow[vis:])
	}
	return pt, ds
}

// Row primitives: the vec.go kernels in float32, loops in float64 whose
// arithmetic is that of the float64 softmax (softmaxRows, softmaxRowGrad).

// flashMaxScaled is the max of scale·x over the elements whose m is not 0
// (m may be nil), −Inf when there are none.
func flashMaxScaled[T Float](x, m []T, scale float64) float64 {
	if x32, ok := any(x).([]float32); ok {
		return float64(vecMaxScaled(x32, any(m).([]float32), float32(scale)))
	}
	mx := math.Inf(-1)
	for j, v := range x {
		if s := float64(v) * scale; (m == nil || m[j] != 0) && s > mx {
			mx = s
		}
	}
	return mx
}

// flashExpShift sets out = exp(scale·x − shift) where m is not 0 (m may be
// nil) and 0 elsewhere, and returns the sum; out may be x.
func flashExpShift[T Float](x, m, out []T, scale, shift float64) float64 {
	if x32, ok := any(x).([]float32); ok {
		return float64(vecExpShift(x32, any(m).([]float32), any(out).([]float32), float32(scale), float32(shift)))
	}
	var sum float64
	for j, v := range x {
		var e float64
		if m == nil || m[j] != 0 {
			e = math.Exp(float64(v)*scale - shift)
		}
		out[j] = T(e)
		sum += e
	}
	return sum
}

// flashScale multiplies x by a.
func flashScale[T Float](x []T, a float64) {
	if x32, ok := any(x).([]float32); ok {
		vecAffine(x32, x32, float32(a), 0)
		return
	}
	for j := range x {
		x[j] = T(float64(x[j]) * a)
	}
}

// flashDot is Σ x·y.
func flashDot[T Float](x, y []T) float64 {
	if x32, ok := any(x).([]float32); ok {
		return float64(vecDot(x32, any(y).([]float32)))
	}
	var s float64
	for j, v := range x {
		s += float64(v) * float64(y[j])
	}
	return s
}

// flashDS sets out = scale·p·(dp − dot); out may be dp.
func flashDS[T Float](p, dp, out []T, scale, dot float64) {
	if p32, ok := any(p).([]float32); ok {
		vecSoftmaxGrad(p32, any(dp).([]float32), any(out).([]float32), float32(scale), float32(dot))
		return
	}
	for j, v := range p {
		out[j] = T(scale * float64(v) * (float64(dp[j]) - dot))
	}
}

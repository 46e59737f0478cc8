package gemm

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/d73a19ff/zoo/internal/parallel"
)

// Format is how a Reduced matrix stores its weights.
type Format uint8

const (
	// BF16 stores each weight as bfloat16 (the top 16 bits of its float32,
	// rounded to nearest even): 2 bytes a weight.
	BF16 Format = iota + 1
	// Int8 stores each row in blocks of BlockSize weights along the row,
	// each block as int8 values q and one float32 scale d with w ≈ d·q
	// (llama.cpp's Q8_0, with a float32 scale): 1.125 bytes a weight.
	Int8
)

// BlockSize is the number of weights that share one Int8 scale.
const BlockSize = 32

// rowAlign is what a Reduced matrix pads its rows to (with zero weights),
// so that the kernels need no tails: two Int8 blocks.
const rowAlign = 2 * BlockSize

// String names the format as the load option does ("bf16", "int8").
func (f Format) String() string {
	switch f {
	case BF16:
		return "bf16"
	case Int8:
		return "int8"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// Reduced is a (Rows, Cols) matrix W held in reduced precision for
// products with float32 vectors, y = W·x, accumulated in float32: the
// weights are widened to float32 inside the kernels and never stored
// wider. It is read-only once made, so its products are safe for
// concurrent use by multiple goroutines.
type Reduced struct {
	Format     Format
	Rows, Cols int
	stride     int       // elements per stored row: Cols rounded up to rowAlign
	bf         []uint16  // BF16: Rows·stride bfloat16 bits
	q          []int8    // Int8: Rows·stride values
	scales     []float32 // Int8: Rows·stride/BlockSize scales
}

// NewReduced converts w, a row-major (rows, cols) float32 matrix, to
// format f. w is only read; the caller may drop it afterwards. Int8 scales
// are max|w|/127 over each block, values rounded to nearest.
func NewReduced(f Format, w []float32, rows, cols int) (*Reduced, error) {
	if rows <= 0 || cols <= 0 || len(w) != rows*cols {
		return nil, fmt.Errorf("gemm: a (%d, %d) matrix cannot hold %d weights", rows, cols, len(w))
	}
	stride := (cols + rowAlign - 1) / rowAlign * rowAlign
	r := &Reduced{Format: f, Rows: rows, Cols: cols, stride: stride}
	switch f {
	case BF16:
		r.bf = make([]uint16, rows*stride)
		parallelRows(rows, func(i0, i1 int) {
			for i := i0; i < i1; i++ {
				row := r.bf[i*stride:]
				for j, v := range w[i*cols : (i+1)*cols] {
					row[j] = ToBF16(v)
				}
			}
		})
	case Int8:
		r.q = make([]int8, rows*stride)
		r.scales = make([]float32, rows*stride/BlockSize)
		parallelRows(rows, func(i0, i1 int) {
			for i := i0; i < i1; i++ {
				src := w[i*cols : (i+1)*cols]
				for b := 0; b < stride/BlockSize; b++ {
					lo := b * BlockSize
					if lo >= cols {
						break
					}
					blk := src[lo:min(lo+BlockSize, cols)]
					var amax float32
					for _, v := range blk {
						amax = max(amax, float32(math.Abs(float64(v))))
					}
					if amax == 0 {
						continue
					}
					d := amax / 127
					r.scales[i*stride/BlockSize+b] = d
					q := r.q[i*stride+lo:]
					for j, v := range blk {
						q[j] = int8(math.RoundToEven(float64(v / d)))
					}
				}
			}
		})
	default:
		return nil, fmt.Errorf("gemm: format %v is not bf16 or int8", f)
	}
	return r, nil
}

// ToBF16 rounds v to the nearest bfloat16 (ties to even), as PyTorch's
// .to(torch.bfloat16) does; NaN stays NaN.
func ToBF16(v float32) uint16 {
	b := math.Float32bits(v)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40 // quiet NaN
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// FromBF16 widens a bfloat16 to float32 (exactly).
func FromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Bytes is the memory the weights take (0 for a nil matrix).
func (r *Reduced) Bytes() int64 {
	if r == nil {
		return 0
	}
	return int64(len(r.bf))*2 + int64(len(r.q)) + int64(len(r.scales))*4
}

// Row widens row i of W into dst (len Cols).
func (r *Reduced) Row(i int, dst []float32) {
	dst = dst[:r.Cols]
	j0 := r.widenAsm(i, dst)
	switch r.Format {
	case BF16:
		for j, h := range r.bf[i*r.stride:][j0:r.Cols] {
			dst[j0+j] = FromBF16(h)
		}
	case Int8:
		q, sc := r.q[i*r.stride:][:r.Cols], r.scales[i*r.stride/BlockSize:]
		for j := j0; j < r.Cols; j++ {
			dst[j] = sc[j/BlockSize] * float32(q[j])
		}
	}
}

// MulVec sets y[i] = Σ_j W[i,j]·x[j] (+ bias[i] when bias is not nil)
// for i < Rows; len(x) = Cols, len(y) = Rows. The rows are shared out
// among GOMAXPROCS goroutines, the caller's included.
func (r *Reduced) MulVec(y, x, bias []float32) {
	if len(x) != r.Cols || len(y) != r.Rows || (bias != nil && len(bias) != r.Rows) {
		panic(fmt.Sprintf("gemm: MulVec of a (%d, %d) matrix with x of %d, y of %d, bias of %d", r.Rows, r.Cols, len(x), len(y), len(bias)))
	}
	xp := getVec(r.stride)
	defer putVec(xp)
	r.prepare(*xp, x)
	parallelRows(r.Rows, func(i0, i1 int) { r.rows(y, *xp, i0, i1) })
	for i, b := range bias {
		y[i] += b
	}
}

// Mul sets the n rows of y (n, Rows) to W·x for the n rows of x (n,
// Cols), plus bias when not nil. A few rows are vector products, each
// reading W once; more widen W to float32 a band of rows at a time and
// multiply the band with all of x's rows (Sgemm), so W is read once.
func (r *Reduced) Mul(y, x, bias []float32, n int) {
	if len(x) != n*r.Cols || len(y) != n*r.Rows {
		panic(fmt.Sprintf("gemm: Mul of a (%d, %d) matrix with %d rows: x has %d values, y %d", r.Rows, r.Cols, n, len(x), len(y)))
	}
	if n <= mulVecRows {
		for t := 0; t < n; t++ {
			r.MulVec(y[t*r.Rows:(t+1)*r.Rows], x[t*r.Cols:(t+1)*r.Cols], bias)
		}
		return
	}
	band := max(16, min(r.Rows, bandBytes/(4*r.Cols)))
	tile := getBand(band * r.Cols)
	defer putBand(tile)
	for i0 := 0; i0 < r.Rows; i0 += band {
		i1 := min(i0+band, r.Rows)
		w := tile[:(i1-i0)*r.Cols]
		parallelRows(i1-i0, func(a, b int) {
			for i := a; i < b; i++ {
				r.Row(i0+i, w[i*r.Cols:(i+1)*r.Cols])
			}
		})
		var beta float32
		if bias != nil {
			for t := 0; t < n; t++ {
				copy(y[t*r.Rows+i0:t*r.Rows+i1], bias[i0:i1])
			}
			beta = 1
		}
		Sgemm(false, true, n, i1-i0, r.Cols, 1, x, r.Cols, w, r.Cols, beta, y[i0:], r.Rows)
	}
}

// mulVecRows is the most rows Mul computes as vector products; bandBytes
// the size of the float32 band it widens W into for more.
var (
	mulVecRows = 4
	bandBytes  = 2 << 20
)

// freeBands keeps Mul's float32 bands between calls, as freeBufs keeps
// the packing buffers: a fresh one per call (2 MB, cleared by the
// allocator) was 3% of a bf16 or int8 prefill.
var freeBands = make(chan []float32, 4)

// getBand returns a band of n floats, reused when one is free.
func getBand(n int) []float32 {
	select {
	case b := <-freeBands:
		if cap(b) >= n {
			return b[:n]
		}
	default:
	}
	return make([]float32, n)
}

// putBand keeps b for a later Mul, unless enough are kept.
func putBand(b []float32) {
	select {
	case freeBands <- b:
	default:
	}
}

// prepare writes x, zero-padded to stride, into xp in the order the
// kernels read it.
func (r *Reduced) prepare(xp, x []float32) {
	copy(xp, x)
	clear(xp[len(x):])
	if r.Format == BF16 && useReducedAsm {
		evenOdd(xp)
	}
}

// evenOdd reorders each 32 values of xp as its 16 even-indexed values
// then its 16 odd-indexed ones, as the bf16 kernel pairs them with the
// low and high halves of each 32-bit word of weights.
func evenOdd(xp []float32) {
	var tmp [32]float32
	for c := 0; c < len(xp); c += 32 {
		for j := 0; j < 16; j++ {
			tmp[j], tmp[16+j] = xp[c+2*j], xp[c+2*j+1]
		}
		copy(xp[c:c+32], tmp[:])
	}
}

// rows computes y[i] for i in [i0, i1) from the prepared x.
func (r *Reduced) rows(y, xp []float32, i0, i1 int) {
	if i0 >= i1 {
		return
	}
	if useReducedAsm {
		r.rowsAsm(y, xp, i0, i1)
		return
	}
	k := r.stride
	switch r.Format {
	case BF16:
		for i := i0; i < i1; i++ {
			y[i] = dotBF16Go(r.bf[i*k:(i+1)*k], xp)
		}
	case Int8:
		for i := i0; i < i1; i++ {
			y[i] = dotInt8Go(r.q[i*k:(i+1)*k], r.scales[i*k/BlockSize:(i+1)*k/BlockSize], xp)
		}
	}
}

// dotBF16Go is Σ w[j]·x[j] with w widened from bfloat16, in four partial
// sums.
func dotBF16Go(w []uint16, x []float32) float32 {
	x = x[:len(w)]
	var s0, s1, s2, s3 float32
	for j := 0; j+4 <= len(w); j += 4 {
		s0 += FromBF16(w[j]) * x[j]
		s1 += FromBF16(w[j+1]) * x[j+1]
		s2 += FromBF16(w[j+2]) * x[j+2]
		s3 += FromBF16(w[j+3]) * x[j+3]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotInt8Go is Σ_blocks d_b·Σ_{j in b} q[j]·x[j].
func dotInt8Go(q []int8, d, x []float32) float32 {
	x = x[:len(q)]
	var s float32
	for b, sc := range d {
		blk, xb := q[b*BlockSize:(b+1)*BlockSize], x[b*BlockSize:(b+1)*BlockSize]
		var s0, s1 float32
		for j := 0; j < BlockSize; j += 2 {
			s0 += float32(blk[j]) * xb[j]
			s1 += float32(blk[j+1]) * xb[j+1]
		}
		s += sc * (s0 + s1)
	}
	return s
}

// parallelRows runs f over [0, rows) on up to GOMAXPROCS goroutines, the
// calling one included, which take chunks of rows in turn from a shared
// counter: on a machine whose cores other processes share, a goroutine
// that gets less of its core takes fewer chunks, where fixed halves would
// wait for the slower one.
func parallelRows(rows int, f func(i0, i1 int)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, rows/minRowsPerWorker))
	if workers <= 1 {
		f(0, rows)
		return
	}
	chunk := max(minRowsPerWorker/4, (rows+8*workers-1)/(8*workers))
	var next atomic.Int64
	work := func() {
		for {
			i0 := int(next.Add(int64(chunk))) - chunk
			if i0 >= rows {
				return
			}
			f(i0, min(i0+chunk, rows))
		}
	}
	parallel.Run(workers, func(int) { work() })
}

// minRowsPerWorker is the fewest rows worth a goroutine of their own.
var minRowsPerWorker = 64

var vecPool sync.Pool

func getVec(n int) *[]float32 {
	if p, ok := vecPool.Get().(*[]float32); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	v := make([]float32, n, max(n, 1024))
	return &v
}

func putVec(p *[]float32) { vecPool.Put(p) }

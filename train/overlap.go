package train

import (
	"fmt"
	"math"
	"time"

	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/mpi"
	"github.com/d73a19ff/zoo/internal/ops"
)

// Reducing the gradient while the backward pass still runs, as PyTorch's
// DistributedDataParallel does (Li et al. 2020, "PyTorch Distributed:
// Experiences on Accelerating Data Parallel Training", VLDB, §3.2.3):
// the step's gradient sums are cut into buckets of about BucketBytes, in
// the reverse of the parameters' order, which is about the order the
// backward pass completes them (the last layer first). On a rank's last
// micro-batch of the step, the graph's program calls back between its ops
// (ops.Tick); as soon as every gradient of a bucket is computed, the rank
// adds them to what its earlier micro-batches summed, exactly as
// accumulation does, and starts that bucket's non-blocking sum
// (IallreduceFloat32) while the backward pass goes on. Every rank starts
// the buckets in the same order (the collectives must match), so a bucket
// waits for the ones before it. Open MPI moves a collective only inside
// MPI calls, so each callback also tests the oldest sum in flight. The
// gradients that Gorgonia's own ops compute (a tied embedding's sum of its
// two uses) are known only when the run ends: their buckets start then.
// The sums are the same as one Allreduce of everything (with two ranks,
// bit for bit).

// DefaultBucketBytes is the size of a reduction bucket unless
// SetBucketBytes says otherwise: 1 MB, measured (README, "Training on
// several machines").
const DefaultBucketBytes = 1 << 20

var bucketBytes = DefaultBucketBytes

// SetBucketBytes sets the size the gradient is cut into for reductions
// that overlap the backward pass; 0 or less turns the overlap off (one
// Allreduce after the backward pass). Call it before New.
func SetBucketBytes(n int) { bucketBytes = n }

// overlapping says whether training graphs reduce in buckets during their
// backward pass: with several ranks and buckets on.
func overlapping() bool { return Ranks() > 1 && bucketBytes > 0 }

// overlap is a Trainer's bucketed reduction.
type overlap struct {
	buckets []*bucket
	summed  []*tensor.Dense // the Trainer's gradient sums
	checked bool            // the ranks agreed on how many values they sum
	// This step's run: the graph, its micro-batch's weight, the buckets
	// started, the oldest not known to be complete, the first error met
	// in a callback and the time spent in callbacks.
	c      *compiled
	weight float32
	next   int
	tested int
	err    error
	spent  time.Duration
	early  int // buckets started before the end of their run, in all
}

// bucket is a run of gradient sums reduced together.
type bucket struct {
	slots []int // indexes in Trainer.summed, in the bucket's order
	buf   []float32
	req   *mpi.Request
}

// newOverlap cuts summed into buckets; nil (no overlap) with one process,
// with buckets turned off, or when a gradient is not float32.
func newOverlap(summed []*tensor.Dense) *overlap {
	if !overlapping() {
		return nil
	}
	o := &overlap{summed: summed}
	var cur *bucket
	for i := len(summed) - 1; i >= 0; i-- {
		if summed[i].Dtype() != tensor.Float32 {
			return nil
		}
		if cur == nil || 4*len(cur.buf) >= bucketBytes {
			cur = &bucket{}
			o.buckets = append(o.buckets, cur)
		}
		cur.slots = append(cur.slots, i)
		cur.buf = append(cur.buf, make([]float32, summed[i].Size())...)
	}
	return o
}

// afterRun is the place of a gradient known only when its run has ended:
// run's last call of advance, with math.MaxInt, starts its bucket.
const afterRun = math.MaxInt - 1

// ticks are what a compiled graph tells the overlap: the place in its
// program after which each bucket's gradients are all computed (0: at
// once, none of them is this graph's; afterRun: only after the run),
// and where each parameter's gradient is read during the run.
type ticks struct {
	after []int
	value map[int]func() *tensor.Dense // by slot, for the gradients ops.Result knows
	index map[int]int                  // by slot: the parameter's index in the graph
}

// ticksOf works out c's ticks once.
func (o *overlap) ticksOf(c *compiled) *ticks {
	if c.ticks != nil {
		return c.ticks
	}
	tk := &ticks{after: make([]int, len(o.buckets)), value: map[int]func() *tensor.Dense{}, index: map[int]int{}}
	seq := map[int]int{}
	for k, s := range c.slots {
		tk.index[s] = k
		if q, v, ok := ops.Result(c.nodes[k]); ok {
			seq[s], tk.value[s] = q, v
		} else {
			seq[s] = afterRun
		}
	}
	for b, bk := range o.buckets {
		for _, s := range bk.slots {
			if q, used := seq[s]; used {
				tk.after[b] = max(tk.after[b], q)
			}
		}
	}
	c.ticks = tk
	return tk
}

// run runs c on b, the rank's last micro-batch of the step, starting the
// buckets' sums as the backward pass completes them; all are in flight when
// it returns. It returns the batch's mean loss. finish waits for them.
func (o *overlap) run(c *compiled, b Batch) (float64, error) {
	if !o.checked {
		n := 0
		for _, bk := range o.buckets {
			n += len(bk.buf)
		}
		if err := sameLength(n, "gradient values"); err != nil {
			return 0, err
		}
		o.checked = true
	}
	tk := o.ticksOf(c)
	o.c, o.weight = c, float32(b.Targets())
	o.next, o.tested, o.err, o.spent = 0, 0, nil, 0
	c.tick.Set(func(seq int) { o.advance(tk, seq) })
	l, err := c.run(b)
	c.tick.Set(nil)
	if err != nil {
		return 0, err
	}
	o.advance(tk, math.MaxInt)
	return l, o.err
}

// advance starts, in order, the buckets whose gradients are all computed
// before the op at place seq, and tests the oldest sum in flight.
func (o *overlap) advance(tk *ticks, seq int) {
	if o.err != nil {
		return
	}
	began := time.Now()
	defer func() { o.spent += time.Since(began) }()
	for o.next < len(o.buckets) && tk.after[o.next] < seq {
		bk := o.buckets[o.next]
		if err := o.fill(tk, bk); err != nil {
			o.err = err
			return
		}
		if bk.req, o.err = world.IallreduceFloat32(bk.buf); o.err != nil {
			return
		}
		o.next++
		if seq != math.MaxInt {
			o.early++
		}
	}
	for o.tested < o.next {
		done, err := o.buckets[o.tested].req.Test()
		if err != nil {
			o.err = err
			return
		}
		if !done {
			return
		}
		o.tested++
	}
}

// fill writes into bk's buffer the step's gradient sums of its parameters:
// what the earlier micro-batches summed plus this one's gradient times its
// target count, in the arithmetic of addScaled.
func (o *overlap) fill(tk *ticks, bk *bucket) error {
	off := 0
	w := o.weight
	for _, s := range bk.slots {
		sum := o.summed[s].Float32s()
		dst := bk.buf[off : off+len(sum)]
		off += len(sum)
		k, used := tk.index[s]
		if !used {
			copy(dst, sum)
			continue
		}
		var g []float32
		if v, ok := tk.value[s]; ok {
			g = v().Float32s()
		} else if f32, _, err := floats(o.c.grads[k]); err != nil {
			return fmt.Errorf("gradient %d: %w", k, err)
		} else {
			g = f32
		}
		if len(g) != len(sum) {
			return fmt.Errorf("gradient %d has %d values, its parameter %d", k, len(g), len(sum))
		}
		for j, v := range g {
			dst[j] = sum[j] + w*v
		}
	}
	return nil
}

// finish waits for every bucket's sum and copies them into the gradient
// sums.
func (o *overlap) finish() error {
	for _, bk := range o.buckets[:o.next] {
		if err := bk.req.Wait(); err != nil {
			return err
		}
		off := 0
		for _, s := range bk.slots {
			off = packAt(bk.buf, off, o.summed[s].Float32s(), false)
		}
	}
	if o.next != len(o.buckets) {
		return fmt.Errorf("train: %d of %d gradient buckets were reduced", o.next, len(o.buckets))
	}
	return nil
}

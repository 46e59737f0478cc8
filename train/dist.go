package train

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"time"
	"unsafe"

	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/mpi"
)

// Data parallelism (built with -tags mpi, run under mpirun): every rank
// holds the whole model and runs the same engine. Within a step the ranks
// take turns at the data: of the step's Size·Accumulate micro-batches in
// the data's (seeded, resumable) order, rank r trains on those whose index
// is r modulo Size and skips the others. Their gradients, weighted by
// target tokens as accumulation weights them, are summed across the ranks
// with one Allreduce, so every rank takes the same optimizer step on the
// same weights. Two ranks at Accumulate k are thus one rank at Accumulate
// 2k: the same micro-batches, the same dropout masks (each micro-batch
// draws the masks of its index in the step), the same loss; the sum is in
// another order only with more than two ranks.
//
// Rank 0 alone writes the run directory (checkpoints, metrics.jsonl,
// loss.png), shows progress and recovers or moves old runs; every rank
// reads the data and, when resuming, the checkpoint, so the run directory
// must be on a file system every rank sees. At the start of Run the
// weights, the optimizer's moments and the trainer's position are
// broadcast from rank 0, and every CheckEvery steps the ranks compare a
// checksum of their weights.

// world is the process's communicator (SetWorld); nil runs one process.
var world *mpi.Comm

// SetWorld makes the engine data-parallel over c's ranks (nil or a Comm of
// one rank: a single process). Call it once, before building a Trainer.
func SetWorld(c *mpi.Comm) { world = c }

// World is the communicator SetWorld set, nil for a single process.
func World() *mpi.Comm { return world }

// Rank is this process's rank, 0 without MPI.
func Rank() int {
	if world == nil {
		return 0
	}
	return world.Rank()
}

// Ranks is the number of processes training together, 1 without MPI.
func Ranks() int {
	if world == nil {
		return 1
	}
	return world.Size()
}

// Leader reports whether this process writes the run directory and the
// progress display: rank 0, or the only process.
func Leader() bool { return Rank() == 0 }

// DefaultCheckEvery is how often, in steps, the ranks compare their
// weights' checksums unless Config.CheckEvery says otherwise. They start
// equal and take equal steps; a difference means a rank computed something
// else (another binary, a bug) and stops the run.
const DefaultCheckEvery = 100

// Agree is for work that rank 0 does alone (preparing the run directory):
// every rank passes its own error and gets back an error if any rank had
// one, so that all continue or all stop. With one process it returns err.
func Agree(err error) error {
	if Ranks() == 1 {
		return err
	}
	var mine int64
	if err != nil {
		mine = 1
	}
	all, cerr := world.AllgatherInt64(mine)
	if cerr != nil {
		return fmt.Errorf("train: rank %d: %w", Rank(), cerr)
	}
	if err != nil {
		return err
	}
	for r, v := range all {
		if v != 0 {
			return fmt.Errorf("train: rank %d stopped with an error (see its output); rank %d stops too", r, Rank())
		}
	}
	return nil
}

// LeaderFirst runs f on rank 0 and makes the other ranks wait for it: what
// only one process may do to a shared run directory (preparing it, or the
// files a pipeline writes after training). Every rank gets an error if
// rank 0 had one (Agree); a single process just runs f.
func LeaderFirst(f func() error) error {
	var err error
	if Leader() {
		err = f()
	}
	return Agree(err)
}

// reduceStep sums, across the ranks, a step's gradient sums (t.summed, each
// a target-weighted sum over the rank's micro-batches), which parameters
// were used, the loss sum, the target count, the reports' sums and whether
// any rank was asked to stop. The report names are sorted, and must be the
// same on every rank (the same task's graphs): the first step checks that
// every rank reduces as many values, and later steps trust it.
func (t *Trainer) reduceStep(lossSum *float64, total *int, sums map[string]float64, stop bool) (bool, error) {
	if Ranks() == 1 {
		return false, nil // Run checks ctx itself before the next step
	}
	began := time.Now()
	defer func() { t.commTime += time.Since(began) }()
	check := !t.lengthsChecked
	t.lengthsChecked = true
	if t.overlapped {
		t.commTime += t.ov.spent // starting and testing the buckets' sums
		if err := t.ov.finish(); err != nil {
			return false, err
		}
	} else if err := t.reduceTensors(t.summed, check); err != nil {
		return false, err
	}
	head := make([]float64, 0, 3+len(t.used))
	head = append(head, *lossSum, float64(*total), b2f(stop))
	for _, u := range t.used {
		head = append(head, b2f(u))
	}
	if err := reduceScalars(head, sums, check); err != nil {
		return false, err
	}
	*lossSum, *total, stop = head[0], int(math.Round(head[1])), head[2] > 0
	for i := range t.used {
		t.used[i] = head[3+i] > 0
	}
	return stop, nil
}

// reduceScalars sums head in place and the values of sums, in the order
// of their sorted names, across the ranks; with check, it first makes sure
// every rank reduces as many.
func reduceScalars(head []float64, sums map[string]float64, check bool) error {
	keys := sortedKeys(sums)
	sc := slices.Concat(head, make([]float64, len(keys)))
	for i, k := range keys {
		sc[len(head)+i] = sums[k]
	}
	if check {
		if err := sameLength(len(sc), "scalars to sum (loss, targets, reports)"); err != nil {
			return err
		}
	}
	if err := world.AllreduceFloat64(sc); err != nil {
		return err
	}
	copy(head, sc)
	for i, k := range keys {
		sums[k] = sc[len(head)+i]
	}
	return nil
}

// sameLength checks that every rank is about to reduce n values: a
// different count would otherwise be an MPI error or a hang.
func sameLength(n int, what string) error {
	all, err := world.AllgatherInt64(int64(n))
	if err != nil {
		return err
	}
	for r, v := range all {
		if v != int64(n) {
			return fmt.Errorf("train: rank %d has %d %s, rank %d has %d: the ranks run different tasks or configurations", Rank(), n, what, r, v)
		}
	}
	return nil
}

// reduceTensors sums ts across the ranks in place: the float32 ones packed
// into one buffer (one Allreduce, however many parameters), the float64
// ones into another. With check, it first makes sure every rank sums as
// many values.
func (t *Trainer) reduceTensors(ts []*tensor.Dense, check bool) error {
	var n32, n64 int
	for _, d := range ts {
		switch d.Dtype() {
		case tensor.Float32:
			n32 += d.Size()
		case tensor.Float64:
			n64 += d.Size()
		default:
			return fmt.Errorf("train: cannot reduce a %v gradient", d.Dtype())
		}
	}
	if check {
		if err := sameLength(n32+n64, "gradient values"); err != nil {
			return err
		}
	}
	if cap(t.buf32) < n32 {
		t.buf32 = make([]float32, n32)
	}
	if cap(t.buf64) < n64 {
		t.buf64 = make([]float64, n64)
	}
	b32, b64 := t.buf32[:n32], t.buf64[:n64]
	pack := func(in bool) {
		var o32, o64 int
		for _, d := range ts {
			switch d.Dtype() {
			case tensor.Float32:
				o32 = packAt(b32, o32, d.Float32s(), in)
			case tensor.Float64:
				o64 = packAt(b64, o64, d.Float64s(), in)
			}
		}
	}
	pack(true)
	if err := world.AllreduceFloat32(b32); err != nil {
		return err
	}
	if err := world.AllreduceFloat64(b64); err != nil {
		return err
	}
	pack(false)
	return nil
}

// shareState makes every rank's weights, optimizer moments and position
// rank 0's: at the start of Run, whether the run is new, resumed or
// started from pretrained weights.
func (t *Trainer) shareState() error {
	if Ranks() == 1 {
		return nil
	}
	for _, p := range t.task.Store().Params() {
		if err := bcastTensor(p.Value); err != nil {
			return fmt.Errorf("train: sharing %s: %w", p.Name, err)
		}
	}
	opt, err := t.opt.State()
	if err != nil {
		return err
	}
	if opt, err = bcastFrom(opt, 0); err != nil {
		return err
	}
	if !Leader() {
		if err := t.opt.Restore(opt); err != nil {
			return fmt.Errorf("train: rank %d: rank 0's optimizer state: %w", Rank(), err)
		}
	}
	st, err := t.state()
	if err != nil {
		return err
	}
	js, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if js, err = bcastFrom(js, 0); err != nil {
		return err
	}
	if Leader() {
		return nil
	}
	if err := json.Unmarshal(js, &st); err != nil {
		return err
	}
	if err := t.setState(st); err != nil {
		return fmt.Errorf("train: rank %d: rank 0's position: %w", Rank(), err)
	}
	return nil
}

// bcastFrom sends root's bytes to every rank: the length, then the bytes;
// the other ranks' b is ignored.
func bcastFrom(b []byte, root int) ([]byte, error) {
	n := make([]byte, 8)
	binary.LittleEndian.PutUint64(n, uint64(len(b)))
	if err := world.BcastBytes(n, root); err != nil {
		return nil, err
	}
	if Rank() != root {
		b = make([]byte, binary.LittleEndian.Uint64(n))
	}
	return b, world.BcastBytes(b, root)
}

// ShardRange is this rank's part [lo, hi) of n items of work shared by the
// ranks after training (decoding a test set, say): contiguous, in rank
// order, sizes differing by at most one. A single process gets [0, n).
func ShardRange(n int) (lo, hi int) {
	r, s := Rank(), Ranks()
	q, extra := n/s, n%s
	lo = r*q + min(r, extra)
	hi = lo + q
	if r < extra {
		hi++
	}
	return lo, hi
}

// Gather gives every rank all ranks' items, in rank order: the results of
// work split by ShardRange, put back together. The items travel as JSON
// (one broadcast per rank), so T is anything encoding/json round-trips:
// strings, numbers, structs of them. Every rank must call it; a single
// process gets mine back.
func Gather[T any](mine []T) ([]T, error) {
	if Ranks() == 1 {
		return mine, nil
	}
	blob, err := json.Marshal(mine)
	if err != nil {
		return nil, err
	}
	var all []T
	for r := 0; r < Ranks(); r++ {
		b, err := bcastFrom(blob, r)
		if err != nil {
			return nil, fmt.Errorf("train: gathering rank %d's results: %w", r, err)
		}
		var part []T
		if err := json.Unmarshal(b, &part); err != nil {
			return nil, fmt.Errorf("train: rank %d's results: %w", r, err)
		}
		all = append(all, part...)
	}
	return all, nil
}

// bcastTensor sends rank 0's values of a float tensor to every rank.
func bcastTensor(d *tensor.Dense) error {
	switch d.Dtype() {
	case tensor.Float32:
		return world.BcastFloat32(d.Float32s(), 0)
	case tensor.Float64:
		return world.BcastBytes(bytesOf(d.Float64s()), 0)
	}
	return fmt.Errorf("cannot broadcast a %v tensor", d.Dtype())
}

// checkSame compares a checksum of every rank's weights and fails, naming
// the step and the ranks, if they differ.
func (t *Trainer) checkSame() error {
	if Ranks() == 1 {
		return nil
	}
	h := fnv.New64a()
	for _, p := range t.task.Store().Params() {
		switch d := p.Value; d.Dtype() {
		case tensor.Float32:
			h.Write(bytesOf(d.Float32s()))
		case tensor.Float64:
			h.Write(bytesOf(d.Float64s()))
		}
	}
	sum := int64(h.Sum64())
	all, err := world.AllgatherInt64(sum)
	if err != nil {
		return err
	}
	for r, v := range all {
		if v != sum {
			return fmt.Errorf("train: step %d: the weights of rank %d and rank %d differ (checksums %x and %x): "+
				"every rank must run the same binary with the same flags and GOMAXPROCS; stopping", t.step, Rank(), r, uint64(sum), uint64(v))
		}
	}
	return nil
}

// skipBatch passes over a micro-batch another rank trains on.
func (t *Trainer) skipBatch() error {
	if s, ok := t.data.(Skipper); ok {
		return s.Skip()
	}
	_, err := t.data.Next()
	return err
}

// KeepBatch reports whether this rank trains on the k-th training
// micro-batch counted from the start of Run (or of a resumed run: both
// begin at a step, a multiple of Ranks() micro-batches): every Ranks()-th,
// as the engine takes them. Data that makes batches ahead of time (an
// image loader) uses it to make only this rank's; it implements Skipper
// for the others.
func KeepBatch(k int) bool { return k%Ranks() == Rank() }

// Skipper is Data that can pass over its next training batch more cheaply
// than by building it: the batches other ranks train on.
type Skipper interface {
	Skip() error
}

// StepGrouper is Data whose batches differ in cost, such as length
// buckets. New tells it how many micro-batches make a step (ranks ×
// accumulation) before the first batch, so that it can serve a step's
// micro-batches alike in shape: data-parallel ranks then take about as
// long each, rather than all waiting in the step's reduction for the one
// with the longest batch.
type StepGrouper interface {
	GroupSteps(n int) error
}

// bytesOf is the memory of v, as bytes (a weight's bits, to hash or send).
func bytesOf[T float32 | float64](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

// packAt copies v into buf at off (in) or back out of it, and returns
// the offset after it.
func packAt[T float32 | float64](buf []T, off int, v []T, in bool) int {
	if in {
		copy(buf[off:], v)
	} else {
		copy(v, buf[off:])
	}
	return off + len(v)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// shardedLoss is meanLoss over the validation batches, each rank taking
// every Ranks()-th batch and the sums reduced: the same loss as one
// process's, summed in another order. With fewer batches than ranks every
// rank evaluates them all. Data-parallel ranks ignore ctx here (all must
// reach the reduction); they stop together after the step.
func (t *Trainer) shardedLoss(ctx context.Context, batches []Batch) (float64, map[string]float64, error) {
	if Ranks() == 1 || len(batches) < Ranks() {
		loss, _, parts, err := meanLoss(ctx, t.eval, batches)
		return loss, parts, err
	}
	var mine []Batch
	for i, b := range batches {
		if i%Ranks() == Rank() {
			mine = append(mine, b)
		}
	}
	sum, targets, sums, err := lossSums(context.Background(), t.eval, mine)
	if err != nil {
		return 0, nil, err
	}
	head := []float64{sum, float64(targets)}
	if err := reduceScalars(head, sums, true); err != nil {
		return 0, nil, err
	}
	total := int(math.Round(head[1]))
	if total == 0 {
		return 0, nil, fmt.Errorf("the batches hold no targets")
	}
	return head[0] / float64(total), meanReports(sums, total), nil
}

package datasets

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
)

// Bucketed is one batch of a BucketPlan: the indices of its examples and
// the padded lengths of its source and target, bucket bounds both. A batch
// is fed as a source of shape (len(Idx), SrcT) and a target of shape
// (len(Idx), TgtT); len(Idx) ≤ the plan's batch size.
type Bucketed struct {
	Idx        []int // example indices, into the lengths given to NewBucketPlan
	SrcT, TgtT int   // padded source and target lengths
}

// BucketPlan groups translation examples into batches whose padded lengths
// are bucket bounds, so that a model with fixed shapes is compiled once per
// (SrcT, TgtT) shape rather than once per length, while padding stays
// small. Every example of a batch fits its shape.
//
// Next walks epochs: each epoch every example is in exactly one batch.
// Batches are formed per bucket after a seeded shuffle of the bucket's
// examples (so only a bucket's last batch may be short), and the order of
// all the epoch's batches is then shuffled across buckets. Each epoch
// shuffles anew; the sequence is the same for the same seed and input.
type BucketPlan struct {
	srcLens, tgtLens []int
	bounds           []int
	batch            int
	group            int          // batches per group of one shape (SetGroup); 1: no grouping
	buckets          []planBucket // non-empty buckets, by (SrcT, TgtT)
	fingerprint      uint64       // of the lengths, bounds and batch, checked by Restore

	src        *rand.PCG
	rng        *rand.Rand
	epochStart []byte     // src's state before the current epoch was shuffled
	epoch      int        // epochs begun
	order      []Bucketed // the current epoch's batches; nil before the first
	cursor     int        // next batch of order
}

// planBucket is the examples of one (SrcT, TgtT) shape, in index order.
type planBucket struct {
	srcT, tgtT int
	idx        []int
}

// NewBucketPlan plans batches of batch examples, where example i has
// srcLens[i] source and tgtLens[i] target tokens (counted with any special
// tokens the model sees). bounds are the padded lengths, ascending, e.g.
// 8, 16, 24, 32: example i goes to the bucket of the smallest bounds
// srcT ≥ srcLens[i] and tgtT ≥ tgtLens[i], chosen for each side
// independently, so there are at most len(bounds)² shapes. An example
// longer than the last bound is an error: the caller truncates or drops it
// first. So are empty input, lengths below 1, batch ≤ 0 and bounds that
// are not positive and strictly ascending. The random order comes from a
// PCG seeded with seed.
func NewBucketPlan(srcLens, tgtLens []int, bounds []int, batch int, seed uint64) (*BucketPlan, error) {
	fail := func(format string, args ...any) (*BucketPlan, error) {
		return nil, fmt.Errorf("datasets: bucket plan: "+format, args...)
	}
	switch {
	case len(srcLens) == 0:
		return fail("no examples")
	case len(srcLens) != len(tgtLens):
		return fail("%d source lengths but %d target lengths", len(srcLens), len(tgtLens))
	case batch <= 0:
		return fail("batch %d must be positive", batch)
	case len(bounds) == 0:
		return fail("no bounds")
	}
	for i, b := range bounds {
		if b <= 0 {
			return fail("bound %d is %d, must be positive", i, b)
		}
		if i > 0 && b <= bounds[i-1] {
			return fail("bounds must be strictly ascending: %d follows %d", b, bounds[i-1])
		}
	}
	last := bounds[len(bounds)-1]
	bucketOf := make(map[[2]int]int)
	var buckets []planBucket
	for i := range srcLens {
		s, t := srcLens[i], tgtLens[i]
		switch {
		case s < 1 || t < 1:
			return fail("example %d has lengths (%d, %d), both must be at least 1", i, s, t)
		case s > last || t > last:
			return fail("example %d has lengths (%d, %d), longer than the last bound %d: truncate or drop it first", i, s, t, last)
		}
		key := [2]int{bounds[boundIndex(bounds, s)], bounds[boundIndex(bounds, t)]}
		k, ok := bucketOf[key]
		if !ok {
			k = len(buckets)
			bucketOf[key] = k
			buckets = append(buckets, planBucket{srcT: key[0], tgtT: key[1]})
		}
		buckets[k].idx = append(buckets[k].idx, i)
	}
	slices.SortFunc(buckets, func(a, b planBucket) int {
		if a.srcT != b.srcT {
			return a.srcT - b.srcT
		}
		return a.tgtT - b.tgtT
	})
	p := &BucketPlan{
		srcLens: slices.Clone(srcLens),
		tgtLens: slices.Clone(tgtLens),
		bounds:  slices.Clone(bounds),
		batch:   batch,
		group:   1,
		buckets: buckets,
		src:     rand.NewPCG(seed, pcgStream),
	}
	p.rng = rand.New(p.src)
	p.fingerprint = p.computeFingerprint()
	return p, nil
}

// boundIndex returns the index of the smallest bound ≥ n; n ≤ the last.
func boundIndex(bounds []int, n int) int {
	i, _ := slices.BinarySearch(bounds, n)
	return i
}

// Batch returns the batch size B: every batch has at most B examples.
func (p *BucketPlan) Batch() int { return p.batch }

// Epoch returns the number of epochs Next has begun: 0 before the first
// call, 1 during the first epoch.
func (p *BucketPlan) Epoch() int { return p.epoch }

// NumBatches returns the number of batches in an epoch: those of All,
// rounded up to a multiple of the group size (SetGroup).
func (p *BucketPlan) NumBatches() int {
	n := 0
	for _, b := range p.buckets {
		n += (len(b.idx) + p.batch - 1) / p.batch
	}
	return (n + p.group - 1) / p.group * p.group
}

// SetGroup makes Next serve batches in groups of g consecutive batches of
// one shape wherever it can, for callers that run g batches together: the
// micro-batches of one step, spread over data-parallel ranks, which then
// take about equally long instead of waiting in the step's reduction for
// the rank with the longest bucket. Each epoch, every bucket's batches are
// cut into groups of g; the batches left over (fewer than g per bucket)
// are grouped in bucket order, so a mixed group has neighbouring shapes,
// and the last group is filled up by repeating batches from the start of
// the leftovers, as PyTorch's DistributedSampler repeats examples to make
// its shares even; then the groups are shuffled. So an epoch has a multiple
// of g batches, every example is in one of them at least, and a run that
// starts at a group boundary keeps to group boundaries across epochs.
//
// g = 1 is the default and changes nothing. SetGroup must come before the
// first Next and before Restore (a state records the group size); g < 1 or
// a plan already under way is an error.
func (p *BucketPlan) SetGroup(g int) error {
	switch {
	case g < 1:
		return fmt.Errorf("datasets: bucket plan: group of %d batches; need at least 1", g)
	case p.order != nil:
		return fmt.Errorf("datasets: bucket plan: group size set after the first batch")
	}
	p.group = g
	p.fingerprint = p.computeFingerprint()
	return nil
}

// Shapes lists the distinct (SrcT, TgtT) shapes of the plan's batches,
// ascending by SrcT then TgtT, so the caller knows how many graphs it
// compiles.
func (p *BucketPlan) Shapes() [][2]int {
	out := make([][2]int, len(p.buckets))
	for i, b := range p.buckets {
		out[i] = [2]int{b.srcT, b.tgtT}
	}
	return out
}

// Next returns the next training batch, beginning a new epoch (with a new
// shuffle) after the last batch of the current one. The result is the
// caller's to keep.
func (p *BucketPlan) Next() Bucketed {
	if p.order == nil || p.cursor == len(p.order) {
		p.beginEpoch()
	}
	b := p.order[p.cursor]
	p.cursor++
	return Bucketed{Idx: slices.Clone(b.Idx), SrcT: b.SrcT, TgtT: b.TgtT}
}

// beginEpoch shuffles the next epoch's batches, remembering the random
// state it started from so that State can describe the position.
func (p *BucketPlan) beginEpoch() {
	p.epochStart, _ = p.src.MarshalBinary() // a PCG cannot fail to marshal
	p.order = p.shuffledBatches()
	p.cursor = 0
	p.epoch++
}

// shuffledBatches shuffles each bucket's examples, cuts them into batches
// and shuffles the batches (or, with a group size, the groups of batches:
// SetGroup), drawing from p.rng.
func (p *BucketPlan) shuffledBatches() []Bucketed {
	perBucket := make([][]Bucketed, len(p.buckets))
	for i, b := range p.buckets {
		idx := slices.Clone(b.idx)
		p.rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		perBucket[i] = appendBatches(nil, idx, p.batch, b.srcT, b.tgtT)
	}
	if p.group == 1 {
		out := slices.Concat(perBucket...)
		p.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	g := p.group
	var groups [][]Bucketed
	var left []Bucketed
	for _, bs := range perBucket {
		full := len(bs) / g * g
		for k := 0; k < full; k += g {
			groups = append(groups, bs[k:k+g])
		}
		left = append(left, bs[full:]...)
	}
	for i, n := 0, len(left); len(left)%g != 0; i++ {
		left = append(left, left[i%n])
	}
	for k := 0; k < len(left); k += g {
		groups = append(groups, left[k:k+g])
	}
	p.rng.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
	return slices.Concat(groups...)
}

// appendBatches cuts idx into batches of at most batch indices.
func appendBatches(out []Bucketed, idx []int, batch, srcT, tgtT int) []Bucketed {
	for start := 0; start < len(idx); start += batch {
		end := min(start+batch, len(idx))
		out = append(out, Bucketed{Idx: idx[start:end:end], SrcT: srcT, TgtT: tgtT})
	}
	return out
}

// All returns every batch once, in a fixed order that does not depend on
// the seed or on Next: buckets ascending by (SrcT, TgtT), examples in
// index order within a bucket. It is for evaluation; the result is the
// caller's to keep.
func (p *BucketPlan) All() []Bucketed {
	var out []Bucketed
	for _, b := range p.buckets {
		out = appendBatches(out, slices.Clone(b.idx), p.batch, b.srcT, b.tgtT)
	}
	return out
}

// PaddingFraction returns the fraction of the token slots of an epoch's
// batches, source and target together, that are padding: 1 − Σ lengths /
// Σ len(Idx)·(SrcT + TgtT). The rows missing from a short batch are not
// counted. It is the same for every epoch.
func (p *BucketPlan) PaddingFraction() float64 {
	var tokens, slots int
	for _, b := range p.buckets {
		for _, i := range b.idx {
			tokens += p.srcLens[i] + p.tgtLens[i]
		}
		slots += len(b.idx) * (b.srcT + b.tgtT)
	}
	return 1 - float64(tokens)/float64(slots)
}

// bucketStateVersion is the first byte of State's output.
const bucketStateVersion = 1

// State returns the plan's position — the epoch, the batch within it and
// the random state the epoch was shuffled from — so that a resumed
// training run, restoring it into a plan made from the same lengths,
// bounds and batch size, gets the batches it would have seen next.
func (p *BucketPlan) State() ([]byte, error) {
	rng := p.epochStart
	if p.order == nil {
		var err error
		if rng, err = p.src.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("datasets: bucket plan state: %w", err)
		}
	}
	out := []byte{bucketStateVersion}
	out = binary.BigEndian.AppendUint64(out, p.fingerprint)
	out = binary.BigEndian.AppendUint64(out, uint64(p.epoch))
	out = binary.BigEndian.AppendUint64(out, uint64(p.cursor))
	return append(out, rng...), nil
}

// Restore sets the plan's position from State's output, which must come
// from a plan with the same lengths, bounds and batch size (the seed does
// not matter: the random state is restored).
func (p *BucketPlan) Restore(state []byte) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("datasets: bucket plan restore: "+format, args...)
	}
	const head = 1 + 3*8
	if len(state) < head || state[0] != bucketStateVersion {
		return fail("not a bucket plan state (%d bytes)", len(state))
	}
	if fp := binary.BigEndian.Uint64(state[1:]); fp != p.fingerprint {
		return fail("the state is of a plan with other lengths, bounds, batch size or group size (data-parallel ranks × gradient accumulation steps)")
	}
	epoch := binary.BigEndian.Uint64(state[9:])
	cursor := binary.BigEndian.Uint64(state[17:])
	src := rand.NewPCG(0, 0)
	if err := src.UnmarshalBinary(state[head:]); err != nil {
		return fail("%w", err)
	}
	if epoch == 0 && cursor != 0 || epoch > 1<<62 || cursor > uint64(p.NumBatches()) {
		return fail("corrupt state: epoch %d, batch %d of %d", epoch, cursor, p.NumBatches())
	}
	p.src = src
	p.rng = rand.New(src)
	p.epoch, p.order, p.cursor, p.epochStart = 0, nil, 0, nil
	if epoch > 0 {
		p.beginEpoch() // replays the shuffle of the saved epoch
		p.epoch, p.cursor = int(epoch), int(cursor)
	}
	return nil
}

// computeFingerprint hashes what decides the batches apart from the seed.
func (p *BucketPlan) computeFingerprint() uint64 {
	h := fnv.New64a()
	var buf []byte
	put := func(v int) { buf = binary.BigEndian.AppendUint64(buf[:0], uint64(v)); h.Write(buf) }
	put(p.batch)
	if p.group > 1 { // plans without groups keep the fingerprint they had before groups
		put(-p.group)
	}
	put(len(p.bounds))
	for _, b := range p.bounds {
		put(b)
	}
	put(len(p.srcLens))
	for i := range p.srcLens {
		put(p.srcLens[i])
		put(p.tgtLens[i])
	}
	return h.Sum64()
}

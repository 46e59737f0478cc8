package datasets

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"
)

// MaxLoaderWorkers is the most worker goroutines an ImageLoader runs, and
// MaxPrefetch the most batches it makes ahead: each worker holds a batch
// in the making and each prefetched batch its pixels, so far larger
// numbers only exhaust memory (a billion workers once asked for a 16 GB
// channel). Decoding is CPU-bound: more workers than cores gain nothing.
const (
	MaxLoaderWorkers = 256
	MaxPrefetch      = 1024
)

// LoaderConfig sets an ImageLoader.
type LoaderConfig struct {
	// BatchSize is B, the images per batch.
	BatchSize int
	// Workers is the number of goroutines that decode, process and augment
	// batches (0: 1). The output does not depend on it.
	Workers int
	// Prefetch is the number of batches made ahead of the consumer
	// (0: 2·Workers + 1), a bound on memory.
	Prefetch int
	// Seed seeds the per-epoch shuffle and the augmentations.
	Seed uint64
	// Augment, when set, augments each item (Augment.Apply); nil only
	// processes.
	Augment *Augment
	// Mixup, when set, mixes each batch and gives soft targets.
	Mixup *Mixup
	// OnePass serves the items once, in index order, the last batch
	// possibly short, then io.EOF: for evaluation. Augment and Mixup still
	// apply if set (leave them nil to evaluate).
	OnePass bool
	// Keep, when set, picks the batches this process makes: k counts the
	// batches from each (re)start of the workers (the first Next, and the
	// first after Restore or Close). The others are not decoded; Skip
	// passes over them. For data-parallel ranks, which each train on every
	// n-th batch (train.KeepBatch).
	Keep func(k int) bool
}

// CheckWorkers reports a number of loader workers outside [0,
// MaxLoaderWorkers], saying what to do.
func CheckWorkers(n int) error {
	switch {
	case n < 0:
		return fmt.Errorf("workers %d: want 0 or more", n)
	case n > MaxLoaderWorkers:
		return fmt.Errorf("workers %d is more than %d: image decoding is CPU-bound, so use about one worker per core (this machine has %d)", n, MaxLoaderWorkers, runtime.NumCPU())
	}
	return nil
}

// ImageBatch is one batch of processed images.
type ImageBatch struct {
	// Pixels are the images, (B, C, H, W) row-major.
	Pixels []float32
	// Labels are the B label ids.
	Labels []int
	// Soft are the mixed soft targets, (B, K), rows summing to 1, when the
	// loader mixes; else nil.
	Soft       []float32
	B, C, H, W int
	// Epoch and Index place the batch: Index is its number in the epoch.
	Epoch, Index int
	// Wait is how long Next waited for this batch: 0 when the workers were
	// ahead.
	Wait time.Duration
}

// Targets is the number of labelled images, B: it makes *ImageBatch a
// train.Batch, whose loss is normalised by the targets of a step.
func (b *ImageBatch) Targets() int { return b.B }

// LoaderState is a position in the stream of training batches: the epoch
// and the number of items of its shuffled order already served. It
// marshals to JSON for checkpoints.
type LoaderState struct {
	Epoch int `json:"epoch"`
	Pos   int `json:"pos"`
}

// ImageLoader serves batches of an ImageSet, decoded, processed and
// augmented by worker goroutines ahead of the consumer (at most Prefetch
// batches), in an order and with contents that depend only on the seed,
// the epoch and the position, never on the number of workers or on
// timing. In training (not OnePass) it serves batches forever: each
// epoch is a fresh seeded shuffle (rand.NewPCG(seed, epoch).Perm, as
// pretrain's BERTPreTrainingData) and the items that do not fill a last
// batch are skipped. It is not safe for concurrent use by several
// consumers.
type ImageLoader struct {
	set  ImageSet
	proc *ImageProcessor
	cfg  LoaderConfig
	ctx  context.Context
	st   LoaderState

	run    *loaderRun
	waited time.Duration
	served int
}

// loaderRun is a started pipeline: a dispatcher and the workers.
type loaderRun struct {
	cancel context.CancelFunc
	order  chan *pending // batches in serving order, Prefetch deep
	wg     sync.WaitGroup
	ctx    context.Context
}

// pending is a batch being made.
type pending struct {
	epoch, pos, index int
	items             []int
	skip              bool // not made here (LoaderConfig.Keep)
	batch             *ImageBatch
	err               error
	done              chan struct{}
}

// NewImageLoader serves batches of set processed by proc. Its goroutines
// start on the first Next (or Start) and stop when ctx is cancelled or
// Close is called.
func NewImageLoader(ctx context.Context, set ImageSet, proc *ImageProcessor, cfg LoaderConfig) (*ImageLoader, error) {
	if cfg.BatchSize < 1 {
		return nil, fmt.Errorf("image loader: batch size %d: want 1 or more", cfg.BatchSize)
	}
	if set.Len() == 0 {
		return nil, fmt.Errorf("image loader: the data set is empty")
	}
	if !cfg.OnePass && set.Len() < cfg.BatchSize {
		return nil, fmt.Errorf("image loader: %d images for a batch of %d: use more images or a smaller batch", set.Len(), cfg.BatchSize)
	}
	if cfg.Workers < 0 || cfg.Prefetch < 0 {
		return nil, fmt.Errorf("image loader: %d workers, prefetch %d: want 0 or more", cfg.Workers, cfg.Prefetch)
	}
	if err := CheckWorkers(cfg.Workers); err != nil {
		return nil, fmt.Errorf("image loader: %w", err)
	}
	if cfg.Prefetch > MaxPrefetch {
		return nil, fmt.Errorf("image loader: prefetch %d is more than %d batches: lower it", cfg.Prefetch, MaxPrefetch)
	}
	cfg.Workers = max(cfg.Workers, 1)
	if cfg.Prefetch == 0 {
		cfg.Prefetch = 2*cfg.Workers + 1
	}
	if cfg.Augment != nil {
		if err := cfg.Augment.Validate(); err != nil {
			return nil, fmt.Errorf("image loader: %w", err)
		}
	}
	if cfg.Mixup != nil {
		if err := cfg.Mixup.Validate(); err != nil {
			return nil, fmt.Errorf("image loader: %w", err)
		}
		if cfg.Mixup.NumClasses != len(set.Labels()) {
			return nil, fmt.Errorf("image loader: mixup over %d classes for a data set of %d labels", cfg.Mixup.NumClasses, len(set.Labels()))
		}
	}
	return &ImageLoader{set: set, proc: proc, cfg: cfg, ctx: ctx}, nil
}

// Len is the number of batches in one epoch (or in the one pass).
func (l *ImageLoader) Len() int {
	if l.cfg.OnePass {
		return (l.set.Len() + l.cfg.BatchSize - 1) / l.cfg.BatchSize
	}
	return l.set.Len() / l.cfg.BatchSize
}

// Start starts the workers, if they are not running, so that batches are
// ready before the first Next.
func (l *ImageLoader) Start() {
	if l.run != nil {
		return
	}
	ctx, cancel := context.WithCancel(l.ctx)
	r := &loaderRun{cancel: cancel, order: make(chan *pending, l.cfg.Prefetch), ctx: ctx}
	work := make(chan *pending)
	r.wg.Add(1 + l.cfg.Workers)
	go func() {
		defer r.wg.Done()
		defer close(work)
		defer close(r.order)
		l.dispatch(ctx, l.st, r.order, work)
	}()
	for range l.cfg.Workers {
		go func() {
			defer r.wg.Done()
			for p := range work {
				p.batch, p.err = l.make(p)
				close(p.done)
			}
		}()
	}
	l.run = r
}

// dispatch sends the batches from st on, each to order (which bounds how
// far ahead the workers go) and to work.
func (l *ImageLoader) dispatch(ctx context.Context, st LoaderState, order, work chan<- *pending) {
	n, b := l.set.Len(), l.cfg.BatchSize
	perm := l.epochOrder(st.Epoch)
	for k := 0; ; k++ {
		if st.Pos >= n || !l.cfg.OnePass && st.Pos+b > n {
			if l.cfg.OnePass {
				return
			}
			st = LoaderState{Epoch: st.Epoch + 1}
			perm = l.epochOrder(st.Epoch)
		}
		end := min(st.Pos+b, n)
		p := &pending{epoch: st.Epoch, pos: st.Pos, index: st.Pos / b, items: perm[st.Pos:end], done: make(chan struct{})}
		if l.cfg.Keep != nil && !l.cfg.Keep(k) {
			p.skip = true
			close(p.done)
		}
		select {
		case order <- p:
		case <-ctx.Done():
			return
		}
		if p.skip {
			st.Pos = end
			continue
		}
		select {
		case work <- p:
		case <-ctx.Done():
			return
		}
		st.Pos = end
	}
}

// epochOrder is the order of the items in epoch: a seeded shuffle, or the
// index order for OnePass.
func (l *ImageLoader) epochOrder(epoch int) []int {
	n := l.set.Len()
	if l.cfg.OnePass {
		perm := make([]int, n)
		for i := range perm {
			perm[i] = i
		}
		return perm
	}
	return rand.New(rand.NewPCG(l.cfg.Seed, uint64(epoch))).Perm(n)
}

// make decodes, processes and augments one batch.
func (l *ImageLoader) make(p *pending) (*ImageBatch, error) {
	h, w := l.proc.OutputSize()
	c, b := l.proc.Channels, len(p.items)
	n := c * h * w
	out := &ImageBatch{Pixels: make([]float32, b*n), Labels: make([]int, b), B: b, C: c, H: h, W: w, Epoch: p.epoch, Index: p.index}
	for r, i := range p.items {
		img, label, err := l.set.Item(i)
		if err != nil {
			return nil, fmt.Errorf("image loader: %w", err)
		}
		if m := l.proc.MinSize; m > 0 {
			if b := img.Bounds(); b.Dx() < m || b.Dy() < m {
				return nil, fmt.Errorf("image loader: %s: %d×%d pixels is smaller than the model's patch of %d×%d: use larger images", ItemName(l.set, i), b.Dx(), b.Dy(), m, m)
			}
		}
		dst := out.Pixels[r*n : (r+1)*n]
		if l.cfg.Augment != nil {
			err = l.cfg.Augment.Apply(dst, l.proc, img, l.cfg.Seed, p.epoch, i)
		} else {
			err = l.proc.ProcessInto(dst, img)
		}
		if err != nil {
			return nil, fmt.Errorf("image loader: %s: %w", ItemName(l.set, i), err)
		}
		out.Labels[r] = label
	}
	if l.cfg.Mixup != nil {
		soft, _, err := l.cfg.Mixup.Apply(out.Pixels, out.Labels, c, h, w, l.cfg.Seed, p.epoch, p.index)
		if err != nil {
			return nil, fmt.Errorf("image loader: batch %d of epoch %d: %w", p.index, p.epoch, err)
		}
		out.Soft = soft
	}
	return out, nil
}

// Next returns the next batch, waiting for the workers if they are
// behind (the wait is in the batch's Wait and in Waited). With OnePass it
// returns io.EOF after the last batch. An item that fails to load is an
// error naming it; the position stays before its batch.
func (l *ImageLoader) Next() (*ImageBatch, error) {
	p, wait, err := l.take()
	if err != nil {
		return nil, err
	}
	if p.skip {
		return nil, fmt.Errorf("image loader: batch %d of epoch %d is not made here (LoaderConfig.Keep): pass over it with Skip", p.index, p.epoch)
	}
	p.batch.Wait = wait
	l.waited += wait
	l.served++
	return p.batch, nil
}

// Skip passes over the next batch: one that LoaderConfig.Keep left to
// another process, without decoding it (or a made one, discarded).
func (l *ImageLoader) Skip() error {
	_, _, err := l.take()
	return err
}

// take waits for the next pending batch and moves the position past it.
func (l *ImageLoader) take() (*pending, time.Duration, error) {
	l.Start()
	r := l.run
	// A cancelled context wins over a batch already made: select picks at
	// random among ready cases.
	if err := r.ctx.Err(); err != nil {
		return nil, 0, fmt.Errorf("image loader: %w", err)
	}
	start := time.Now()
	var p *pending
	select {
	case q, ok := <-r.order:
		if !ok {
			if err := r.ctx.Err(); err != nil {
				return nil, 0, fmt.Errorf("image loader: %w", err)
			}
			return nil, 0, io.EOF
		}
		p = q
	case <-r.ctx.Done():
		return nil, 0, fmt.Errorf("image loader: %w", r.ctx.Err())
	}
	select {
	case <-p.done:
	case <-r.ctx.Done():
		return nil, 0, fmt.Errorf("image loader: %w", r.ctx.Err())
	}
	if p.err != nil {
		l.Close() // restart from the failed batch if called again
		return nil, 0, p.err
	}
	l.st = LoaderState{Epoch: p.epoch, Pos: p.pos + len(p.items)}
	return p, time.Since(start), nil
}

// Waited is the total time Next waited for data and the number of batches
// it served.
func (l *ImageLoader) Waited() (total time.Duration, batches int) { return l.waited, l.served }

// State is the position after the last batch Next returned.
func (l *ImageLoader) State() LoaderState { return l.st }

// Restore moves to st (from State), so that the next batches are those
// that followed it; the workers restart from there.
func (l *ImageLoader) Restore(st LoaderState) error {
	if st.Epoch < 0 || st.Pos < 0 || st.Pos > l.set.Len() || l.cfg.OnePass && st.Epoch != 0 {
		return fmt.Errorf("image loader: state %+v does not fit %d images: resume with the run's data and settings", st, l.set.Len())
	}
	l.Close()
	l.st = st
	return nil
}

// Close stops the workers and waits for them to end. The loader can be
// used again: Next restarts them from State.
func (l *ImageLoader) Close() {
	if l.run == nil {
		return
	}
	l.run.cancel()
	l.run.wg.Wait()
	l.run = nil
}

// LoadAll processes every item of set once, in index order, into batches
// of b (the last possibly short), on workers goroutines: the evaluation
// batches, the same at every evaluation. No augmentation.
func LoadAll(ctx context.Context, set ImageSet, proc *ImageProcessor, b, workers int) ([]*ImageBatch, error) {
	l, err := NewImageLoader(ctx, set, proc, LoaderConfig{BatchSize: b, Workers: workers, OnePass: true})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	var out []*ImageBatch
	for {
		batch, err := l.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, batch)
	}
}

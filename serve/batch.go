package serve

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errClosed answers the requests of a server that is closing.
var errClosed = errors.New("the server is shutting down: retry on another instance")

// batchReq is one request's texts waiting for a batch; key separates
// requests that cannot share one (fill-mask's top-k).
type batchReq struct {
	ctx   context.Context
	key   int
	texts []string
	done  chan batchResult // buffered: the batcher never blocks on it
}

type batchResult struct {
	out []any
	err error
}

// batcher gathers the concurrent requests of one encoder model into
// batches of at most maxBatch texts; run runs a batch as one call and each
// request gets its own results back. One goroutine runs the batches in
// turn, so the requests that arrive while one runs queue for the next.
//
// A request that finds the model idle (no batch running, none queued)
// starts at once, with whatever else has queued by then: a lone client
// never waits for company. A batch takes what queued while the last one
// ran (as text-embeddings-inference does), and waits for more only under
// load: when the last batch held several requests and ended less than
// wait before this batch's first request came, this batch waits up to
// wait (from then) for the last batch's clients to come back, ending as
// soon as it holds as many requests as the last batch, or maxBatch texts.
// wait <= 0 never waits.
type batcher struct {
	model    string
	run      func(ctx context.Context, key int, texts []string) ([]any, error)
	in       chan *batchReq
	maxBatch int
	maxQueue int
	wait     time.Duration
	met      *metrics
	ctx      context.Context // the batches' context, cancelled by close
	cancel   context.CancelFunc
	stop     chan struct{}
	stopped  chan struct{}

	// The loop's own: the last batch's requests and when it ended.
	lastReqs int
	lastEnd  time.Time
}

func newBatcher(model string, cfg *Config, met *metrics, run func(ctx context.Context, key int, texts []string) ([]any, error)) *batcher {
	ctx, cancel := context.WithCancel(context.Background())
	b := &batcher{model: model, run: run, in: make(chan *batchReq, cfg.MaxQueue), maxBatch: cfg.MaxBatch, maxQueue: cfg.MaxQueue,
		wait: cfg.BatchWait, met: met, ctx: ctx, cancel: cancel, stop: make(chan struct{}), stopped: make(chan struct{})}
	go b.loop()
	return b
}

// submit queues texts and waits for their results (one per text), or
// for ctx. A full queue is 429; a closed batcher errClosed.
func (b *batcher) submit(ctx context.Context, key int, texts []string) ([]any, error) {
	r := &batchReq{ctx: ctx, key: key, texts: texts, done: make(chan batchResult, 1)}
	select {
	case <-b.stop:
		return nil, errClosed
	default:
	}
	select {
	case b.in <- r:
		b.met.queue.WithLabelValues(b.model).Inc()
	default:
		return nil, queueFull(b.model, b.maxQueue)
	}
	select {
	case res := <-r.done:
		return res.out, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// close stops the loop; requests still queued get errClosed.
func (b *batcher) close() {
	close(b.stop)
	b.cancel()
	<-b.stopped
}

func (b *batcher) loop() {
	defer close(b.stopped)
	var pending []*batchReq // taken from in for a later batch (another key)
	for {
		var first *batchReq
		if len(pending) > 0 {
			first, pending = pending[0], pending[1:]
		} else {
			select {
			case r := <-b.in:
				first = r
			case <-b.stop:
			}
		}
		if first == nil {
			b.drain(pending)
			return
		}
		start := time.Now()
		batch, n := []*batchReq{first}, len(first.texts)
		var keep []*batchReq
		for _, r := range pending {
			if r.key == first.key && n+len(r.texts) <= b.maxBatch {
				batch, n = append(batch, r), n+len(r.texts)
			} else {
				keep = append(keep, r)
			}
		}
		pending = keep
		add := func(r *batchReq) (full bool) {
			if r.key == first.key && n+len(r.texts) <= b.maxBatch {
				batch, n = append(batch, r), n+len(r.texts)
				return n >= b.maxBatch
			}
			pending = append(pending, r)
			return r.key == first.key // the next one of this key would not fit
		}
		// What queued while the last batch ran (or by now).
		full := n >= b.maxBatch
	drain:
		for !full && len(pending) < b.maxQueue {
			select {
			case r := <-b.in:
				full = add(r)
			default:
				break drain
			}
		}
		// Under load, wait for the last batch's clients to come back.
		if !full && b.wait > 0 && b.lastReqs > 1 && len(batch) < b.lastReqs && start.Sub(b.lastEnd) < b.wait {
			timer := time.NewTimer(b.wait)
		gather:
			for len(batch) < b.lastReqs && len(pending) < b.maxQueue {
				select {
				case r := <-b.in:
					if add(r) {
						break gather
					}
				case <-timer.C:
					break gather
				case <-b.stop:
					break gather
				}
			}
			timer.Stop()
		}
		b.lastReqs = len(batch)
		b.runBatch(batch)
		b.lastEnd = time.Now()
	}
}

// drain answers the requests left at close.
func (b *batcher) drain(pending []*batchReq) {
	for _, r := range pending {
		b.answer(r, batchResult{err: errClosed})
	}
	for {
		select {
		case r := <-b.in:
			b.answer(r, batchResult{err: errClosed})
		default:
			return
		}
	}
}

// answer hands r its result; it leaves the queue.
func (b *batcher) answer(r *batchReq, res batchResult) {
	b.met.queue.WithLabelValues(b.model).Dec()
	r.done <- res
}

// runBatch runs the requests still wanted as one call and hands each its
// results. When the call fails and it held several requests, each runs
// alone, so that one request's bad input fails that request only.
func (b *batcher) runBatch(batch []*batchReq) {
	live := batch[:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			b.answer(r, batchResult{err: err})
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	var texts []string
	for _, r := range live {
		texts = append(texts, r.texts...)
	}
	b.met.batch.WithLabelValues(b.model).Observe(float64(len(texts)))
	out, err := b.call(live[0].key, texts)
	if err != nil && len(live) > 1 && b.ctx.Err() == nil {
		for _, r := range live {
			b.runBatch([]*batchReq{r})
		}
		return
	}
	if err == nil && len(out) != len(texts) {
		err = fmt.Errorf("model %s: %d results for %d texts", b.model, len(out), len(texts))
	}
	at := 0
	for _, r := range live {
		if err != nil {
			b.answer(r, batchResult{err: err})
			continue
		}
		b.answer(r, batchResult{out: out[at : at+len(r.texts)]})
		at += len(r.texts)
	}
}

// call runs one batch, a panic in the pipeline becoming an error (the
// batcher goroutine must not die: the process would).
func (b *batcher) call(key int, texts []string) (out []any, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, &apiError{Status: 500, Type: typeServer, Message: fmt.Sprintf("internal error: model %s failed on a batch: %v", b.model, p)}
		}
	}()
	out, err = b.run(b.ctx, key, texts)
	if err != nil && b.ctx.Err() != nil {
		return nil, errClosed // closed mid-batch: not the client's doing
	}
	return out, err
}

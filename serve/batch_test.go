package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// requireSameAnswer: got and want are the same JSON but for numbers,
// which agree within tol (relative, at least absolute tol near 0).
func requireSameAnswer(t testing.TB, want, got any, tol float64, where string) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		require.True(t, ok, "%s: %v is not an object", where, got)
		require.Len(t, g, len(w), where)
		for k, v := range w {
			requireSameAnswer(t, v, g[k], tol, where+"."+k)
		}
	case []any:
		g, ok := got.([]any)
		require.True(t, ok, "%s: %v is not an array", where, got)
		require.Len(t, g, len(w), where)
		for i := range w {
			requireSameAnswer(t, w[i], g[i], tol, fmt.Sprintf("%s[%d]", where, i))
		}
	case float64:
		g, ok := got.(float64)
		require.True(t, ok, "%s: %v is not a number", where, got)
		require.LessOrEqual(t, math.Abs(w-g), tol*max(1, math.Abs(w)), "%s: %v and %v", where, w, g)
	default:
		require.Equal(t, want, got, where)
	}
}

// TestBatchingEquivalence: concurrent requests for one model are served
// in shared forward passes (the batch-size histogram counts fewer
// batches than requests: each model's first batch is held until every
// other request has queued behind it, and those share the next), and
// each answer is the one the same request
// gets from a server that does not batch (MaxBatch 1): the same labels,
// entities, tokens and words, and scores and vectors equal to float32
// rounding (1e-5). Not bit for bit: the float32 GEMM of a padded batch
// of B rows rounds differently from one of 1 row, as zoo predict's
// answers differ between --batch-size 1 and 8.
func TestBatchingEquivalence(t *testing.T) {
	dirs := testCheckpoints(t)
	use := map[string]string{"cls": dirs["cls"], "ner": dirs["ner"], "mlm": dirs["mlm"], "feat": dirs["feat"], "gcls": dirs["gcls"]}
	reg := prometheus.NewRegistry()
	s, batched := startServer(t, use, Config{MaxBatch: 64, BatchWait: 200 * time.Millisecond, Registry: reg})
	_, alone := startServer(t, use, Config{MaxBatch: 1})
	// A request that finds its model idle runs at once: hold the batches
	// until every request has queued, so that the rest share batches
	// whatever the timing. (Written before any request: the handlers'
	// sends on the queue order it before the batchers read it.)
	gate := make(chan struct{})
	var open sync.Once
	t.Cleanup(func() { open.Do(func() { close(gate) }) }) // before the servers close
	for _, m := range s.models {
		run := m.batch.run
		m.batch.run = func(ctx context.Context, key int, texts []string) ([]any, error) {
			<-gate
			return run(ctx, key, texts)
		}
	}
	texts := []string{"the cat sat on the mat", "a dog ran", "paris is in france", "the park", "a cat ran in the park",
		"paris", "the dog sat on the cat in paris", "france is a park"}
	type call struct{ path, body string }
	var calls []call
	for i, s := range texts {
		calls = append(calls,
			call{"/models/cls", fmt.Sprintf(`{"inputs": %q, "parameters": {"top_k": 2}}`, s)},
			call{"/models/gcls", fmt.Sprintf(`{"inputs": [%q]}`, s)},
			call{"/models/ner", fmt.Sprintf(`{"inputs": %q}`, s)},
			call{"/v1/embeddings", fmt.Sprintf(`{"model": "feat", "input": %q}`, s)},
			call{"/models/feat", fmt.Sprintf(`{"inputs": [%q, "the cat"]}`, s)},
			call{"/models/mlm", fmt.Sprintf(`{"inputs": "%s [MASK]", "parameters": {"top_k": %d}}`, s, 2+i%2)}, // one batch for every top_k
		)
	}
	got := make([]string, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() {
			code, body, _ := post(t, batched+c.path, c.body)
			require.Equal(t, http.StatusOK, code, string(body))
			got[i] = string(body)
		})
	}
	queued := func() float64 { // requests submitted and not answered, all models
		mfs, err := reg.Gather()
		require.NoError(t, err)
		n := 0.0
		for _, mf := range mfs {
			if mf.GetName() == "zoo_serve_queue_depth" {
				for _, m := range mf.GetMetric() {
					n += m.GetGauge().GetValue()
				}
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return queued() == float64(len(calls)) }, time.Minute, time.Millisecond,
		"every request waits in its model's first batch or queued behind it")
	open.Do(func() { close(gate) })
	wg.Wait()
	for i, c := range calls {
		code, body, _ := post(t, alone+c.path, c.body)
		require.Equal(t, http.StatusOK, code, string(body))
		var w, g any
		require.NoError(t, json.Unmarshal(body, &w))
		require.NoError(t, json.Unmarshal([]byte(got[i]), &g))
		if strings.Contains(c.path, "embeddings") {
			w.(map[string]any)["usage"], g.(map[string]any)["usage"] = nil, nil
		}
		requireSameAnswer(t, w, g, 1e-5, c.path+" "+c.body)
	}
	for _, m := range []string{"cls", "gcls", "ner", "mlm", "feat"} {
		n, sum := batchCounts(t, reg, m)
		require.Less(t, n, uint64(len(texts)), "model %s: fewer batches than requests", m)
		require.Greater(t, sum, float64(n), "model %s: more texts than batches", m)
		t.Logf("model %s: %d batches", m, n)
	}
}

// batchCounts reads model's batch-size histogram: batches and texts.
func batchCounts(t testing.TB, reg *prometheus.Registry, model string) (uint64, float64) {
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "zoo_serve_batch_size" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "model" && l.GetValue() == model {
					return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	t.Fatalf("no batches of model %s", model)
	return 0, 0
}

// TestBatcher: the batcher alone: the requests that queue while a batch
// runs share the next one, texts split back in order, a request whose
// texts fail fails alone, a panic in the pipeline is an error and the
// batcher keeps serving, a full queue is 429, close answers 503.
func TestBatcher(t *testing.T) {
	met, err := newMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	run := func(ctx context.Context, key int, texts []string) ([]any, error) {
		mu.Lock()
		sizes = append(sizes, len(texts))
		mu.Unlock()
		out := make([]any, len(texts))
		for i, s := range texts {
			switch s {
			case "bad":
				return nil, errors.New("bad text")
			case "panic":
				panic("boom")
			case "block":
				<-release
			}
			out[i] = fmt.Sprintf("%d:%s", key, strings.ToUpper(s))
		}
		return out, nil
	}
	cfg := &Config{MaxBatch: 8, BatchWait: 100 * time.Millisecond, MaxQueue: 64}
	b := newBatcher("m", cfg, met, run)
	ctx := context.Background()
	// A batch that runs until released, while the requests queue.
	blocked := make(chan error, 1)
	go func() {
		_, err := b.submit(ctx, 1, []string{"block"})
		blocked <- err
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 1 }, 10*time.Second, time.Millisecond)
	var wg sync.WaitGroup
	results := make([][]any, 6)
	errs := make([]error, 6)
	inputs := [][]string{{"a", "b"}, {"c"}, {"bad"}, {"d", "e", "f"}, {"g"}, {"h"}}
	for i, in := range inputs {
		wg.Go(func() { results[i], errs[i] = b.submit(ctx, 1, in) })
	}
	require.Eventually(t, func() bool { return len(b.in) == len(inputs) }, 10*time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	require.NoError(t, <-blocked)
	for i, in := range inputs {
		if in[0] == "bad" {
			require.ErrorContains(t, errs[i], "bad text")
			continue
		}
		require.NoError(t, errs[i])
		for j, s := range in {
			require.Equal(t, "1:"+strings.ToUpper(s), results[i][j])
		}
	}
	require.Equal(t, 1, sizes[0], "the blocking batch")
	require.LessOrEqual(t, sizes[1], 8, "at most MaxBatch texts")
	require.Greater(t, sizes[1], 3, "the requests queued during a batch share the next: %v", sizes)

	_, err = b.submit(ctx, 0, []string{"panic"})
	var ae *apiError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, 500, ae.Status)
	out, err := b.submit(ctx, 2, []string{"x"})
	require.NoError(t, err, "the batcher survives a panic")
	require.Equal(t, []any{"2:X"}, out)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = b.submit(cctx, 0, []string{"y"})
	require.ErrorIs(t, err, context.Canceled)

	b.close()
	_, err = b.submit(ctx, 0, []string{"z"})
	require.ErrorIs(t, err, errClosed)

	// A full queue: nothing takes from it.
	full := &batcher{model: "f", in: make(chan *batchReq, 1), maxQueue: 1, met: met, stop: make(chan struct{})}
	full.in <- &batchReq{}
	_, err = full.submit(ctx, 0, []string{"a"})
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusTooManyRequests, ae.Status)
	require.Equal(t, 1, ae.RetryAfter)
}

// TestBatcherWait: BatchWait delays no lone request (one that finds the
// model idle starts at once, even a second after a shared batch), and
// under load it gathers: after a batch of three requests, three that come
// back within BatchWait of its end share one batch, which waits for them
// only until it holds three, not the whole BatchWait.
func TestBatcherWait(t *testing.T) {
	reg := prometheus.NewRegistry()
	met, err := newMetrics(reg)
	require.NoError(t, err)
	const wait = 300 * time.Millisecond
	var mu sync.Mutex
	var sizes []int
	release := make(chan struct{})
	run := func(ctx context.Context, key int, texts []string) ([]any, error) {
		mu.Lock()
		sizes = append(sizes, len(texts))
		mu.Unlock()
		if texts[0] == "block" {
			<-release
		}
		return make([]any, len(texts)), nil
	}
	last := func() int { mu.Lock(); defer mu.Unlock(); return sizes[len(sizes)-1] }
	b := newBatcher("m", &Config{MaxBatch: 32, BatchWait: wait, MaxQueue: 64}, met, run)
	defer b.close()
	ctx := context.Background()
	lone := func(what string) {
		t.Helper()
		start := time.Now()
		_, err := b.submit(ctx, 0, []string{"x"})
		require.NoError(t, err)
		require.Less(t, time.Since(start), wait/3, "%s: a lone request waited for company", what)
		require.Equal(t, 1, last(), what)
	}
	lone("the first request")
	lone("a request after a lone one")

	// A shared batch: a blocking one runs while three queue.
	go func() { _, _ = b.submit(ctx, 0, []string{"block"}) }()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 3 }, 10*time.Second, time.Millisecond)
	submitN := func(n int, gap time.Duration) time.Duration {
		var wg sync.WaitGroup
		start := time.Now()
		for i := range n {
			time.Sleep(gap)
			wg.Go(func() {
				_, err := b.submit(ctx, 0, []string{fmt.Sprint(i)})
				require.NoError(t, err)
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	done := make(chan struct{})
	go func() { submitN(3, 0); close(done) }()
	require.Eventually(t, func() bool { return len(b.in) == 3 }, 10*time.Second, time.Millisecond)
	close(release)
	<-done
	require.Equal(t, 3, last(), "the three queued during a batch share the next")

	// Under load: the three come back within BatchWait, a few ms apart.
	took := submitN(3, 15*time.Millisecond)
	require.Equal(t, 3, last(), "the batch waited for the last batch's clients: %v", sizes)
	require.Less(t, took, wait*2/3, "the wait ends once the batch holds as many requests as the last one")
	n, sum := batchCounts(t, reg, "m")
	require.Equal(t, uint64(len(sizes)), n)
	require.Equal(t, float64(1+1+1+3+3), sum)

	// Past BatchWait the load is over: a lone request starts at once.
	time.Sleep(wait + 50*time.Millisecond)
	lone("a request a while after a shared batch")
}

// TestServerLoneRequestNotDelayed: through the server, a request that
// finds its model idle is answered well before BatchWait (1s) would have
// passed, the first as the next.
func TestServerLoneRequestNotDelayed(t *testing.T) {
	dirs := testCheckpoints(t)
	reg := prometheus.NewRegistry()
	const wait = time.Second
	_, url := startServer(t, map[string]string{"cls": dirs["cls"]}, Config{BatchWait: wait, Registry: reg})
	for i := range 3 {
		start := time.Now()
		code, body, _ := post(t, url+"/models/cls", `{"inputs": "the cat sat on the mat"}`)
		require.Equal(t, http.StatusOK, code, string(body))
		require.Less(t, time.Since(start), wait/2, "request %d waited for company", i)
	}
	n, sum := batchCounts(t, reg, "cls")
	require.Equal(t, uint64(3), n)
	require.Equal(t, float64(3), sum)
}

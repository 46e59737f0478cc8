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
// batches than requests), and each answer is the one the same request
// gets from a server that does not batch (MaxBatch 1): the same labels,
// entities, tokens and words, and scores and vectors equal to float32
// rounding (1e-5). Not bit for bit: the float32 GEMM of a padded batch
// of B rows rounds differently from one of 1 row, as zoo predict's
// answers differ between --batch-size 1 and 8.
func TestBatchingEquivalence(t *testing.T) {
	dirs := testCheckpoints(t)
	use := map[string]string{"cls": dirs["cls"], "ner": dirs["ner"], "mlm": dirs["mlm"], "feat": dirs["feat"], "gcls": dirs["gcls"]}
	reg := prometheus.NewRegistry()
	_, batched := startServer(t, use, Config{MaxBatch: 64, BatchWait: 200 * time.Millisecond, Registry: reg})
	_, alone := startServer(t, use, Config{MaxBatch: 1})
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

// TestBatcher: the batcher alone: texts split back in order, a request
// whose texts fail fails alone, a panic in the pipeline is an error and
// the batcher keeps serving, a full queue is 429, close answers 503.
func TestBatcher(t *testing.T) {
	met, err := newMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	var mu sync.Mutex
	var sizes []int
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
			}
			out[i] = fmt.Sprintf("%d:%s", key, strings.ToUpper(s))
		}
		return out, nil
	}
	cfg := &Config{MaxBatch: 8, BatchWait: 100 * time.Millisecond, MaxQueue: 64}
	b := newBatcher("m", cfg, met, run)
	ctx := context.Background()
	var wg sync.WaitGroup
	results := make([][]any, 6)
	errs := make([]error, 6)
	inputs := [][]string{{"a", "b"}, {"c"}, {"bad"}, {"d", "e", "f"}, {"g"}, {"h"}}
	for i, in := range inputs {
		wg.Go(func() { results[i], errs[i] = b.submit(ctx, 1, in) })
	}
	wg.Wait()
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
	require.LessOrEqual(t, sizes[0], 8, "at most MaxBatch texts")
	require.Greater(t, sizes[0], 3, "requests gathered: %v", sizes)

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

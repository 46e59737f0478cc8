package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// workload is one model's requests: body(i) is the i-th request's body.
type workload struct {
	name, path string
	body       func(i int) string
	tokens     bool // count usage.completion_tokens
}

// texts vary the inputs a little, so no two requests in a row are alike.
var texts = []string{
	"the film was a gripping ride from start to end",
	"a dull and lifeless script that goes nowhere",
	"paris is the capital of france and sits on the seine",
	"the cat sat on the mat while the dog ran in the park",
	"an honest, warm and very funny story about two brothers",
	"i would not watch it again, not even for free",
	"light travels faster than sound through the air",
	"the committee will meet again next tuesday to decide",
}

func workloads(o options) []workload {
	return []workload{
		{name: "BERT classification", path: "/models/bert", body: func(i int) string {
			return fmt.Sprintf(`{"inputs": %q}`, texts[i%len(texts)])
		}},
		{name: "sentence embeddings", path: "/v1/embeddings", body: func(i int) string {
			return fmt.Sprintf(`{"model": "embed", "input": %q}`, texts[i%len(texts)])
		}},
		{name: "GPT generation", path: "/v1/completions", tokens: true, body: func(i int) string {
			words := strings.Fields(texts[i%len(texts)])
			return fmt.Sprintf(`{"model": "gpt", "prompt": %q, "max_tokens": %d, "temperature": 0}`, strings.Join(words[:1+i%4], " "), o.genTokens)
		}},
	}
}

// result is one cell's measurement.
type result struct {
	requests, errors, rejected int // rejected: 429
	tokens                     int
	elapsed                    time.Duration
	latencies                  []time.Duration // of the successful requests
	codes                      map[int]int
}

func (r result) throughput() float64 { return float64(r.requests) / r.elapsed.Seconds() }
func (r result) tokensPerSec() float64 {
	return float64(r.tokens) / r.elapsed.Seconds()
}

// percentile is the q-quantile (0 < q ≤ 1) of sorted latencies, the
// nearest rank; 0 when there are none.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// client is a keep-alive HTTP client for c concurrent clients.
func client(c int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: c, MaxIdleConnsPerHost: c, MaxConnsPerHost: c, IdleConnTimeout: time.Minute},
		Timeout: 10 * time.Minute}
}

// one sends one request and returns its status, latency and generated
// tokens.
func one(ctx context.Context, hc *http.Client, url string, w workload, i int) (int, time.Duration, int) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+w.path, strings.NewReader(w.body(i)))
	if err != nil {
		return 0, 0, 0
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, time.Since(start), 0
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	n := 0
	if w.tokens && resp.StatusCode == http.StatusOK {
		var u struct {
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if json.Unmarshal(b, &u) == nil {
			n = u.Usage.CompletionTokens
		}
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
		fmt.Fprintf(os.Stderr, "serveload: %s: %d %s\n", w.path, resp.StatusCode, bytes.TrimSpace(b))
	}
	return resp.StatusCode, d, n
}

// measure runs c closed-loop clients of w for warmup (not counted), then
// for d.
func measure(ctx context.Context, url string, w workload, c int, warmup, d time.Duration) result {
	hc := client(c)
	defer hc.CloseIdleConnections()
	loop(ctx, hc, url, []workload{w}, c, warmup, nil)
	res := result{codes: map[int]int{}}
	var mu sync.Mutex
	start := time.Now()
	loop(ctx, hc, url, []workload{w}, c, d, func(_ workload, code int, lat time.Duration, tokens int) {
		mu.Lock()
		defer mu.Unlock()
		res.codes[code]++
		switch code {
		case http.StatusOK:
			res.requests++
			res.tokens += tokens
			res.latencies = append(res.latencies, lat)
		case http.StatusTooManyRequests:
			res.rejected++
		default:
			res.errors++
		}
	})
	res.elapsed = time.Since(start)
	slices.Sort(res.latencies)
	return res
}

// loop runs c clients for d, client k sending ws[k % len(ws)]'s requests,
// each calling record with every answer.
func loop(ctx context.Context, hc *http.Client, url string, ws []workload, c int, d time.Duration,
	record func(w workload, code int, lat time.Duration, tokens int)) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	for k := 0; k < c; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := ws[k%len(ws)]
			for i := k; ctx.Err() == nil; i += c {
				code, lat, n := one(ctx, hc, url, w, i)
				if ctx.Err() != nil { // cut by the end of the cell: not counted
					return
				}
				if record != nil {
					record(w, code, lat, n)
				}
			}
		}()
	}
	wg.Wait()
}

type row struct {
	workload, mode string
	concurrency    int
	result
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

// writeTable prints the cells as a markdown table, then the ratios of
// the targets: batching on over off at each concurrency, and p99 over the
// single request's latency (p50 at concurrency 1, batching on).
func writeTable(w io.Writer, rows []row, o options) {
	fmt.Fprintf(w, "%d s per cell after %s of warm-up; generation: %d new tokens, greedy.\n\n", int(o.duration.Seconds()), o.warmup, o.genTokens)
	fmt.Fprintln(w, "| workload | batching | concurrency | requests/s | tokens/s | p50 ms | p99 ms | errors | 429s |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		tps := "–"
		if r.tokens > 0 {
			tps = fmt.Sprintf("%.1f", r.tokensPerSec())
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.1f | %s | %s | %s | %d | %d |\n", r.workload, r.mode, r.concurrency, r.throughput(), tps,
			ms(percentile(r.latencies, 0.5)), ms(percentile(r.latencies, 0.99)), r.errors, r.rejected)
	}
	find := func(wl, mode string, c int) *row {
		for i := range rows {
			if rows[i].workload == wl && rows[i].mode == mode && rows[i].concurrency == c {
				return &rows[i]
			}
		}
		return nil
	}
	fmt.Fprintln(w, "\n| workload | concurrency | throughput on/off | p99 on / p50 on at concurrency 1 |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, wl := range []string{"BERT classification", "sentence embeddings", "GPT generation"} {
		single := find(wl, "on", 1)
		for _, c := range o.concurrency {
			on, off := find(wl, "on", c), find(wl, "off", c)
			if on == nil {
				continue
			}
			ratio, lat := "–", "–"
			if off != nil && off.throughput() > 0 {
				a, b := on.throughput(), off.throughput()
				if on.tokens > 0 && off.tokens > 0 {
					a, b = on.tokensPerSec(), off.tokensPerSec()
				}
				ratio = fmt.Sprintf("%.2f×", a/b)
			}
			if single != nil && percentile(single.latencies, 0.5) > 0 {
				lat = fmt.Sprintf("%.2f×", float64(percentile(on.latencies, 0.99))/float64(percentile(single.latencies, 0.5)))
			}
			fmt.Fprintf(w, "| %s | %d | %s | %s |\n", wl, c, ratio, lat)
		}
	}
}

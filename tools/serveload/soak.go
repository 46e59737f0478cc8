package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// soak runs a mixed load (the three models' requests from
// --soak-concurrency clients, split among them) against one server with
// batching on for --soak, samples the server's resident memory (VmRSS)
// every --soak-interval, counts the answers by status, and prints the
// samples and a summary: RSS after the warm-up samples (min, median, max,
// their spread around the median) and the errors beyond 429.
func soak(ctx context.Context, o options, w io.Writer) error {
	srv, err := startServer(ctx, o, "on")
	if err != nil {
		return err
	}
	defer srv.stop()
	pid := srv.cmd.Process.Pid
	hc := client(o.soakConcurrency)
	var mu sync.Mutex
	codes := map[string]map[int]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop(ctx, hc, srv.url, workloads(o), o.soakConcurrency, o.soak, func(wl workload, code int, _ time.Duration, _ int) {
			mu.Lock()
			defer mu.Unlock()
			if codes[wl.name] == nil {
				codes[wl.name] = map[int]int{}
			}
			codes[wl.name][code]++
		})
	}()
	fmt.Fprintf(w, "soak: %s of mixed load, %d clients, batching on; RSS of zoo serve (pid %d) every %s\n\n", o.soak, o.soakConcurrency, pid, o.soakInterval)
	fmt.Fprintln(w, "| elapsed | RSS MiB | requests | errors |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|")
	var rss, minutes []float64
	start := time.Now()
	last := start
	tick := time.NewTicker(o.soakInterval)
	defer tick.Stop()
	sample := func() {
		kb, err := vmRSS(pid)
		if err != nil {
			fmt.Fprintln(os.Stderr, "serveload:", err)
			return
		}
		mu.Lock()
		n, bad := count(codes)
		mu.Unlock()
		rss = append(rss, float64(kb)/1024)
		minutes = append(minutes, time.Since(start).Minutes())
		last = time.Now()
		fmt.Fprintf(w, "| %s | %.1f | %d | %d |\n", time.Since(start).Round(time.Second), float64(kb)/1024, n, bad)
	}
	for running := true; running; {
		select {
		case <-tick.C:
			sample()
		case <-done:
			if time.Since(last) > o.soakInterval/2 { // else the tick just sampled
				sample()
			}
			running = false
		}
	}
	n, bad := count(codes)
	fmt.Fprintf(w, "\n%d requests; errors beyond the deliberate 429s: %d\n", n, bad)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range codes {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(w, "- %s: %v\n", name, codes[name])
	}
	if len(rss) > o.soakWarmup {
		after := rss[o.soakWarmup:]
		lo, hi, med := slices.Min(after), slices.Max(after), median(after)
		fmt.Fprintf(w, "RSS after %d warm-up samples: min %.1f, median %.1f, max %.1f MiB: %+.1f%% / %+.1f%% around the median\n",
			o.soakWarmup, lo, med, hi, 100*(lo-med)/med, 100*(hi-med)/med)
	} else {
		fmt.Fprintf(w, "RSS: %d samples, not more than the %d warm-up ones: no summary\n", len(rss), o.soakWarmup)
	}
	if o.png != "" && len(rss) > 0 {
		if err := soakPNG(o.png, minutes, rss, o.soakWarmup); err != nil {
			return fmt.Errorf("--png: %w", err)
		}
	}
	return ctx.Err()
}

// count is the answers and those that are errors (not 200, not 429).
func count(codes map[string]map[int]int) (n, bad int) {
	for _, m := range codes {
		for c, k := range m {
			n += k
			if c != http.StatusOK && c != http.StatusTooManyRequests {
				bad += k
			}
		}
	}
	return n, bad
}

// vmRSS reads a process's resident memory, in KiB, from /proc (Linux).
func vmRSS(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("RSS: %w (Linux only)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("RSS: no VmRSS in /proc/%d/status", pid)
}

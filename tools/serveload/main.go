// Command serveload measures zoo serve: throughput and latency (p50, p99)
// against concurrency, with batching on and off, for a BERT text
// classifier (BERT-Mini), a sentence-embedding model and a GPT (tokens/s
// across all streams), printed as a markdown table; and a soak mode, a
// mixed load for a long while with the server's resident memory sampled
// every interval and every error counted.
//
// It builds (or takes, --zoo) the zoo binary and starts `zoo serve` on
// loopback once per batching mode: "on" is the server's defaults
// (dynamic batching of the encoders, continuous batching of generation),
// "off" adds --max-batch 1 (every request its own forward pass or
// decoding, at most --max-concurrent at once). Each cell runs a closed
// loop of C clients, each sending its next request when the last is
// answered, for --duration after a short warm-up; the load generator is
// in-process Go (net/http, keep-alive), so on a small machine it takes
// CPU from the server: run it on a quiet machine, and read the numbers
// side by side rather than as absolutes.
//
// Usage:
//
//	go run ./tools/serveload --bert DIR --embed DIR --gpt DIR [--duration 30s] [--concurrency 1,4,16,64]
//	go run ./tools/serveload --bert DIR --embed DIR --gpt DIR --soak 30m [--soak-interval 1m] [--soak-concurrency 16]
//	... --png FILE   # also draws the table (throughput and p99 against concurrency) or the soak's RSS
//	go run ./tools/serveload --replot TABLE.md --png FILE   # draws a table printed before
//	go run ./tools/serveload --tiny DIR ...   # writes untrained stand-ins there first (a smoke run, not a measurement)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type options struct {
	zoo, bert, embed, gpt, tiny string
	duration, warmup            time.Duration
	concurrency                 []int
	modes                       []string
	genTokens                   int
	serveFlags                  []string
	soak, soakInterval          time.Duration
	soakConcurrency             int
	soakWarmup                  int
	png, replot                 string
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	var o options
	f := flag.NewFlagSet("serveload", flag.ContinueOnError)
	f.StringVar(&o.zoo, "zoo", "", "the zoo binary (default: go build ./cmd/zoo into a temporary directory)")
	f.StringVar(&o.bert, "bert", "", "a BERT text-classification checkpoint (BERT-Mini)")
	f.StringVar(&o.embed, "embed", "", "a sentence-embedding checkpoint (a sentence-transformers folder, or a BertModel: mean pooling)")
	f.StringVar(&o.gpt, "gpt", "", "a GPT (or LLaMA) text-generation checkpoint")
	f.StringVar(&o.tiny, "tiny", "", "write untrained stand-ins of the three into this directory and use them where --bert, --embed, --gpt are not given (smoke runs only)")
	f.DurationVar(&o.duration, "duration", 30*time.Second, "how long each cell runs")
	f.DurationVar(&o.warmup, "warmup", 2*time.Second, "the load before each cell, not counted")
	conc := f.String("concurrency", "1,4,16,64", "the concurrencies, comma-separated")
	modes := f.String("modes", "on,off", "the batching modes: on (the server's defaults), off (--max-batch 1)")
	f.IntVar(&o.genTokens, "gen-tokens", 32, "max_tokens of each generation (greedy)")
	extra := f.String("serve-flags", "", "more zoo serve flags, space-separated (both modes)")
	f.DurationVar(&o.soak, "soak", 0, "instead of the table: a mixed load for this long, RSS sampled every --soak-interval")
	f.DurationVar(&o.soakInterval, "soak-interval", time.Minute, "the soak's RSS sampling interval")
	f.IntVar(&o.soakConcurrency, "soak-concurrency", 16, "the soak's clients, split over the three models")
	f.IntVar(&o.soakWarmup, "soak-warmup", 5, "samples left out of the soak's flatness summary (warm-up)")
	f.StringVar(&o.replot, "replot", "", "only draw --png from this file, a table serveload printed before")
	f.StringVar(&o.png, "png", "", "also draw the results to this PNG: throughput and p99 against concurrency, or the soak's RSS")
	if err := f.Parse(args); err != nil {
		return err
	}
	for _, c := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			return fmt.Errorf("--concurrency %q: want positive integers, comma-separated", *conc)
		}
		o.concurrency = append(o.concurrency, n)
	}
	for _, m := range strings.Split(*modes, ",") {
		if m = strings.TrimSpace(m); m != "on" && m != "off" {
			return fmt.Errorf("--modes %q: want on, off or both", *modes)
		}
		o.modes = append(o.modes, strings.TrimSpace(m))
	}
	o.serveFlags = strings.Fields(*extra)
	if o.replot != "" {
		if o.png == "" {
			return errors.New("--replot draws to --png FILE: give it")
		}
		b, err := os.ReadFile(o.replot)
		if err != nil {
			return err
		}
		ps, err := readTable(string(b))
		if err != nil {
			return fmt.Errorf("--replot %s: %w", o.replot, err)
		}
		return tablePNG(o.png, ps)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.tiny != "" {
		if err := writeTiny(o.tiny, &o); err != nil {
			return fmt.Errorf("--tiny: %w", err)
		}
	}
	if o.bert == "" || o.embed == "" || o.gpt == "" {
		return errors.New("give --bert, --embed and --gpt (or --tiny DIR for untrained stand-ins)")
	}
	if o.zoo == "" {
		dir, err := os.MkdirTemp("", "serveload")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.zoo = filepath.Join(dir, "zoo")
		build := exec.CommandContext(ctx, "go", "build", "-o", o.zoo, "./cmd/zoo")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/zoo (run from the repository root, or give --zoo): %w", err)
		}
	}
	if o.soak > 0 {
		return soak(ctx, o, stdout)
	}
	var rows []row
	for _, mode := range o.modes {
		srv, err := startServer(ctx, o, mode)
		if err != nil {
			return err
		}
		for _, w := range workloads(o) {
			for _, c := range o.concurrency {
				fmt.Fprintf(os.Stderr, "serveload: batching %s, %s, concurrency %d\n", mode, w.name, c)
				res := measure(ctx, srv.url, w, c, o.warmup, o.duration)
				rows = append(rows, row{workload: w.name, mode: mode, concurrency: c, result: res})
			}
		}
		srv.stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	writeTable(stdout, rows, o)
	if o.png != "" {
		if err := tablePNG(o.png, points(rows)); err != nil {
			return fmt.Errorf("--png: %w", err)
		}
	}
	return nil
}

// server is a running zoo serve.
type server struct {
	cmd  *exec.Cmd
	url  string
	done chan error
}

// startServer starts zoo serve with the three checkpoints in a batching
// mode and waits for /ready.
func startServer(ctx context.Context, o options, mode string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--log-format", "json",
		"--checkpoint", "bert=" + o.bert, "--checkpoint", "embed=" + o.embed, "--checkpoint", "gpt=" + o.gpt,
		"--max-queue", "1024"}
	if mode == "off" {
		args = append(args, "--max-batch", "1")
	}
	args = append(args, o.serveFlags...)
	cmd := exec.Command(o.zoo, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard // the access log: one line a request
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.zoo, err)
	}
	s := &server{cmd: cmd, url: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	fmt.Fprintf(os.Stderr, "serveload: %s %s\n", o.zoo, strings.Join(args, " "))
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("zoo serve exited while loading: %v (run it by hand to see why)", err)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get(s.url + "/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
	}
	s.stop()
	return nil, errors.New("zoo serve was not ready within 5 minutes")
}

// stop sends SIGTERM (a graceful shutdown) and waits.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/serve"
)

// zoo serve: the serve package's server on a listener, each checkpoint's
// task chosen as zoo predict chooses it (resolveTask), so that a server
// answer is zoo predict's for the same input.

const serveUsage = `usage: zoo serve --checkpoint [NAME=]DIR [--checkpoint [NAME=]DIR ...] [--addr :8080]

Serves checkpoints over HTTP until SIGINT or SIGTERM, then finishes the
requests in flight (at most --shutdown-timeout) and exits. Each checkpoint
is a model named NAME (default: the directory's base name), doing the task
zoo predict would (its config.json's head). Routes:

  POST /models/{name}        Hugging Face's inference API: {"inputs", "parameters"}
                             (image classification: the image's bytes, or base64)
  POST /v1/completions       OpenAI's completions (stream: true for server-sent events)
  POST /v1/chat/completions  OpenAI's chat, by the checkpoint's chat template
  POST /v1/embeddings        OpenAI's embeddings, of a feature-extraction model
  GET  /v1/models            the models
  GET  /                     a web page to try each model
  GET  /health, /ready       liveness; readiness (503 while shutting down)
  GET  /metrics              Prometheus metrics

Requests for the encoder tasks (classification, token classification,
fill-mask, feature extraction) are batched: a request that finds its
model idle runs at once, and those that queue while a batch runs share the
next forward pass of up to --max-batch texts (under load, right after a
batch of several requests, it waits up to --batch-wait for their clients
to come back). Generations are batched continuously: each joins the
model's running batch of --max-running sequences between decoding steps
and leaves when it ends (--max-batch 1 turns both off). See
docs/serving.md.`

// pprofMux serves net/http/pprof's handlers on a mux of its own (the
// package registers them on http.DefaultServeMux, which zoo serve does not
// use).
func pprofMux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("/debug/pprof/", pprof.Index)
	m.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	m.HandleFunc("/debug/pprof/profile", pprof.Profile)
	m.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	m.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return m
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// runServe is zoo serve.
func runServe(args []string, stdout io.Writer) error {
	f := newFlags("zoo serve", serveUsage)
	var ckpts stringList
	f.Var(&ckpts, "checkpoint", "a checkpoint directory to serve, as DIR or NAME=DIR (repeat for several)")
	addr := f.String("addr", ":8080", "the address to listen on")
	keyFile := f.String("api-key-file", "", "a file of API keys, one per line: requests must send Authorization: Bearer KEY (/health and /ready excepted)")
	var cfg serve.Config
	f.IntVar(&cfg.MaxBatch, "max-batch", 32, "the most texts of an encoder task per forward pass (1: no batching, of generation either)")
	f.DurationVar(&cfg.BatchWait, "batch-wait", 3*time.Millisecond, "under load, the most an encoder batch waits for more requests (a request that finds its model idle runs at once); also the most a generation step waits for its slow sequences; negative: never")
	f.IntVar(&cfg.MaxQueue, "max-queue", 256, "the most requests waiting per model; more are answered 429")
	f.IntVar(&cfg.MaxConcurrent, "max-concurrent", 2, "the most unbatched requests (QA, translation, images, beam search, generation with --max-batch 1) running at once per model")
	f.IntVar(&cfg.MaxRunning, "max-running", 16, "the most sequences in a generation model's running batch (continuous batching)")
	f.IntVar(&cfg.MaxCacheTokens, "max-cache-tokens", 8192, "the most tokens a generation model's running batch holds, all rows together")
	f.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", 16<<20, "the largest request body")
	f.IntVar(&cfg.MaxNewTokens, "max-new-tokens", 4096, "the largest max_tokens / max_new_tokens a request may ask")
	f.IntVar(&cfg.MaxInputs, "max-inputs", 256, "the most inputs of one request")
	f.IntVar(&cfg.MaxImagePixels, "max-image-pixels", 40_000_000, "the largest image, in pixels, read from its header before decoding")
	f.DurationVar(&cfg.RequestTimeout, "timeout", 5*time.Minute, "the longest a request may run")
	f.DurationVar(&cfg.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "how long a connection may take to send its headers")
	shutdown := f.Duration("shutdown-timeout", 30*time.Second, "how long SIGINT/SIGTERM waits for the requests in flight before closing them")
	logFormat := f.String("log-format", "text", "access log format on standard error: text or json")
	pprofAddr := f.String("pprof", "", "also serve Go's profiles (net/http/pprof, /debug/pprof/) on this address, e.g. 127.0.0.1:6060; keep it on loopback: it has no API key")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if len(ckpts) == 0 {
		return fmt.Errorf("%w: --checkpoint is required", errUsage)
	}
	var h slog.Handler
	switch *logFormat {
	case "text":
		h = slog.NewTextHandler(stderr, nil)
	case "json":
		h = slog.NewJSONHandler(stderr, nil)
	default:
		return fmt.Errorf("%w: --log-format %q: text or json", errUsage, *logFormat)
	}
	cfg.Logger = slog.New(h)
	if *keyFile != "" {
		b, err := os.ReadFile(*keyFile)
		if err != nil {
			return fmt.Errorf("--api-key-file: %w", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k := strings.TrimSpace(line); k != "" && !strings.HasPrefix(k, "#") {
				cfg.APIKeys = append(cfg.APIKeys, k)
			}
		}
		if len(cfg.APIKeys) == 0 {
			return fmt.Errorf("--api-key-file %s holds no key: one per line", *keyFile)
		}
	}
	for _, c := range ckpts {
		name, dir, ok := strings.Cut(c, "=")
		if !ok {
			name, dir = "", c
		}
		ck, err := models.Open(dir)
		if err != nil {
			return err
		}
		t, err := resolveTask(ck, "")
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", dir, err)
		}
		cfg.Checkpoints = append(cfg.Checkpoints, serve.Checkpoint{Name: name, Dir: dir, Task: t.name})
	}
	ctx, stop := signalContext()
	defer stop()
	s, err := serve.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := s.HTTPServer(*addr)
	if *pprofAddr != "" {
		pl, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			return fmt.Errorf("--pprof: %w", err)
		}
		ps := &http.Server{Handler: pprofMux(), ReadHeaderTimeout: cfg.ReadHeaderTimeout}
		defer ps.Close()
		go func() { _ = ps.Serve(pl) }()
		fmt.Fprintf(stdout, "zoo serve: profiles on http://%s/debug/pprof/\n", pl.Addr())
	}
	var names []string
	for _, m := range s.Models() {
		names = append(names, fmt.Sprintf("%s (%s)", m.Name, m.Task))
	}
	fmt.Fprintf(stdout, "zoo serve: listening on %s: %s\n", ln.Addr(), strings.Join(names, ", "))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Graceful shutdown: /ready fails, the listener closes, and the
	// requests in flight (streams too) finish within --shutdown-timeout;
	// then whatever is left is cut.
	s.Drain()
	fmt.Fprintf(stdout, "zoo serve: shutting down: finishing the requests in flight (at most %s)\n", *shutdown)
	sctx, cancel := context.WithTimeout(context.Background(), *shutdown)
	defer cancel()
	err = srv.Shutdown(sctx)
	if err != nil {
		_ = srv.Close()
		err = fmt.Errorf("shutdown: requests still running after --shutdown-timeout %s were cut: %w", *shutdown, err)
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	s.Close()
	if err == nil {
		fmt.Fprintln(stdout, "zoo serve: stopped")
	}
	return err
}

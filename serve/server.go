package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Checkpoint is one model the server loads.
type Checkpoint struct {
	// Name is the model's name in requests (the path of /models/{name},
	// OpenAI's "model"); "" is the base name of Dir.
	Name string
	// Dir is the checkpoint directory (config.json, model.safetensors and
	// its tokenizer.json or preprocessor_config.json).
	Dir string
	// Task is the Hugging Face pipeline task it serves; "" picks the
	// head's from config.json (architectures, model_type) by
	// TaskForCheckpoint. zoo serve passes zoo predict's choice.
	Task string
}

// Config is what New loads and how the server bounds its work. Zero
// fields take the defaults named.
type Config struct {
	Checkpoints []Checkpoint

	// MaxBatch is the most texts of an encoder task run in one forward
	// pass (default 32); 1 turns dynamic batching off, and with it the
	// continuous batching of generation (each request then decodes on its
	// own, at most MaxConcurrent at once).
	MaxBatch int
	// BatchWait bounds how long an encoder task's batch waits for more
	// requests, under load only (default 3ms). A request that finds its
	// model idle (no batch running, none queued) starts at once, and a
	// batch takes what queued while the last one ran; a batch that starts
	// less than BatchWait after a batch of several requests ended waits
	// up to BatchWait for that batch's clients to come back, until it
	// holds as many requests as that one or MaxBatch texts. Negative never
	// waits. Generation's running batch steps once each running sequence
	// has sent its token, or BatchWait after the first did.
	BatchWait time.Duration
	// MaxQueue is the most requests waiting per model (default 256); more
	// are answered 429 with Retry-After.
	MaxQueue int
	// MaxConcurrent is the most requests of an unbatched task (question
	// answering, translation, image classification, and generation that
	// is not continuously batched: beam search, or MaxBatch 1) running at
	// once per model (default 2); the others wait in its queue.
	MaxConcurrent int
	// MaxRunning is the most sequences in a generation model's running
	// batch (default 16): with continuous batching (MaxBatch > 1) the
	// sequences of every request join it between decoding steps and leave
	// when they end; more wait in the model's queue (MaxQueue).
	MaxRunning int
	// MaxCacheTokens bounds the tokens of a generation model's running
	// batch, all rows together (default 8192): each of the MaxRunning
	// rows holds MaxCacheTokens / MaxRunning slots, and a sequence whose
	// prompt (rounded up to 16 tokens) and new tokens need more, or more
	// than the model's context, is decoded on its own.
	MaxCacheTokens int
	// MaxBodyBytes bounds a request body (default 16 MiB): 413 past it.
	MaxBodyBytes int64
	// MaxImagePixels bounds an image's width × height, read from its
	// header before it is decoded (default 40 megapixels): 413 past it.
	MaxImagePixels int
	// MaxNewTokens bounds max_tokens / max_new_tokens (default 4096).
	MaxNewTokens int
	// MaxInputs bounds the inputs of one request (default 256).
	MaxInputs int
	// RequestTimeout bounds a request's work (default 5 minutes): 408
	// past it.
	RequestTimeout time.Duration
	// APIKeys, when not empty, are the bearer tokens every route but
	// /health and /ready requires (Authorization: Bearer KEY).
	APIKeys []string
	// Logger writes the access log and handler failures (default
	// slog.Default()).
	Logger *slog.Logger
	// Registry is where the server registers its metrics, served at
	// /metrics; nil makes a registry of its own.
	Registry *prometheus.Registry

	// What HTTPServer sets on the http.Server: ReadHeaderTimeout (default
	// 10s; a client that sends no headers for that long is dropped, the
	// slowloris defence), IdleTimeout (default 2 minutes) and
	// MaxHeaderBytes (default 64 KiB).
	ReadHeaderTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                 int
}

func (c *Config) defaults() {
	def := func(x *int, v int) {
		if *x <= 0 {
			*x = v
		}
	}
	def(&c.MaxBatch, 32)
	def(&c.MaxQueue, 256)
	def(&c.MaxConcurrent, 2)
	def(&c.MaxRunning, 16)
	def(&c.MaxCacheTokens, 8192)
	def(&c.MaxImagePixels, 40_000_000)
	def(&c.MaxNewTokens, 4096)
	def(&c.MaxInputs, 256)
	def(&c.MaxHeaderBytes, 64<<10)
	if c.BatchWait == 0 {
		c.BatchWait = 3 * time.Millisecond
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 16 << 20
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 5 * time.Minute
	}
	if c.ReadHeaderTimeout <= 0 {
		c.ReadHeaderTimeout = 10 * time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 2 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
}

// Server serves the checkpoints of its Config over HTTP. It is an
// http.Handler that may serve any number of requests at once: the
// pipelines it holds are safe for concurrent use and only read; each
// encoder model has one batching goroutine that runs its forward passes
// one at a time, and each other model at most MaxConcurrent
// requests at once. Close stops the batching goroutines; requests
// after it are answered 503.
type Server struct {
	cfg      Config
	mux      *http.ServeMux
	models   map[string]*model
	names    []string // in the order of Config.Checkpoints
	log      *slog.Logger
	met      *metrics
	keys     [][]byte
	draining atomic.Bool
	closeMu  sync.Mutex
	closed   bool
}

// New loads cfg's checkpoints (each in its own name space) and returns
// the server, ready. A checkpoint that does not load, a task it does not
// serve, or two checkpoints of one name is an error naming it. ctx
// bounds the loading.
func New(ctx context.Context, cfg Config) (*Server, error) {
	cfg.defaults()
	if len(cfg.Checkpoints) == 0 {
		return nil, errors.New("serve: no checkpoints: give Config.Checkpoints at least one directory")
	}
	s := &Server{cfg: cfg, models: map[string]*model{}, log: cfg.Logger}
	var err error
	if s.met, err = newMetrics(cfg.Registry); err != nil {
		return nil, fmt.Errorf("serve: metrics: %w", err)
	}
	for _, k := range cfg.APIKeys {
		if k = strings.TrimSpace(k); k != "" {
			s.keys = append(s.keys, []byte(k))
		}
	}
	for _, c := range cfg.Checkpoints {
		if err := ctx.Err(); err != nil {
			s.Close()
			return nil, fmt.Errorf("serve: loading: %w", err)
		}
		name := c.Name
		if name == "" {
			name = filepath.Base(filepath.Clean(c.Dir))
		}
		if !validName(name) {
			s.Close()
			return nil, fmt.Errorf("serve: checkpoint %s: model name %q: use letters, digits, '.', '-', '_' and '/'", c.Dir, name)
		}
		if _, dup := s.models[name]; dup {
			s.Close()
			return nil, fmt.Errorf("serve: two checkpoints are named %q: name them NAME=DIR", name)
		}
		m, err := loadModel(name, c.Dir, c.Task, &s.cfg, s.met)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("serve: checkpoint %s: %w", c.Dir, err)
		}
		s.models[name] = m
		s.names = append(s.names, name)
	}
	s.routes()
	return s, nil
}

// validName reports whether a model name is letters, digits and . - _ /
// (Hugging Face's org/name), so that it fits a URL path unescaped.
func validName(name string) bool {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_/", r)) {
			return false
		}
	}
	return name != ""
}

// Models lists the served models' names and tasks, in Config order.
func (s *Server) Models() []ModelInfo {
	out := make([]ModelInfo, 0, len(s.names))
	for _, n := range s.names {
		m := s.models[n]
		out = append(out, ModelInfo{Name: n, Dir: m.dir, Family: m.family, Task: m.task})
	}
	return out
}

// ModelInfo is one served model: its name in requests, its checkpoint
// directory, family and task.
type ModelInfo struct {
	Name, Dir, Family, Task string
}

// Drain marks the server as shutting down: /ready answers 503 so that a
// load balancer stops sending requests, while requests are still served.
func (s *Server) Drain() { s.draining.Store(true) }

// Close drains the server and stops its batching goroutines; requests
// still waiting in a batch queue are answered 503. Call it after the
// http.Server's Shutdown has finished the requests in flight.
func (s *Server) Close() {
	s.Drain()
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for _, m := range s.models {
		m.close()
	}
}

// HTTPServer is an http.Server for s on addr with the Config's slowloris
// and header bounds (ReadHeaderTimeout, IdleTimeout, MaxHeaderBytes). It
// sets no WriteTimeout, which would cut streams: the per-request timeout
// bounds the work instead.
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadHeaderTimeout + time.Minute, // headers and the body
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// ServeHTTP answers one request (the routes of the package doc).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	handle := func(pattern string, auth bool, h func(w http.ResponseWriter, r *http.Request) error) {
		s.mux.Handle(pattern, s.wrap(pattern, auth, h))
	}
	handle("GET /health", false, func(w http.ResponseWriter, r *http.Request) error {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return nil
	})
	handle("GET /ready", false, func(w http.ResponseWriter, r *http.Request) error {
		if s.draining.Load() {
			return &apiError{Status: http.StatusServiceUnavailable, Type: typeUnavailable, Message: "the server is shutting down"}
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "models": len(s.names)})
		return nil
	})
	metricsHandler := promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{})
	handle("GET /metrics", true, func(w http.ResponseWriter, r *http.Request) error {
		metricsHandler.ServeHTTP(w, r)
		return nil
	})
	handle("GET /{$}", false, s.servePage)
	handle("GET /v1/models", true, s.listModels)
	handle("GET /v1/models/{name...}", true, s.getModel)
	handle("POST /models/{name...}", true, s.huggingFace)
	handle("POST /v1/completions", true, s.completions)
	handle("POST /v1/chat/completions", true, s.chatCompletions)
	handle("POST /v1/embeddings", true, s.embeddings)
	posts := []string{"/v1/completions", "/v1/chat/completions", "/v1/embeddings"}
	handle("/", false, func(w http.ResponseWriter, r *http.Request) error {
		if slices.Contains(posts, r.URL.Path) || strings.HasPrefix(r.URL.Path, "/models/") {
			w.Header().Set("Allow", http.MethodPost)
			return &apiError{Status: http.StatusMethodNotAllowed, Type: typeInvalid, Message: fmt.Sprintf("%s takes POST, not %s", r.URL.Path, r.Method)}
		}
		return &apiError{Status: http.StatusNotFound, Type: typeNotFound, Message: fmt.Sprintf("no route %s %s: the routes are GET / (the web page), /health, /ready, /metrics, /v1/models; POST /models/{name}, /v1/completions, /v1/chat/completions, /v1/embeddings", r.Method, r.URL.Path)}
	})
}

// reqInfo is what a handler tells the access log and the metrics about
// its request.
type reqInfo struct {
	model string
}

type infoKey struct{}

func info(r *http.Request) *reqInfo {
	if i, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
		return i
	}
	return &reqInfo{}
}

// wrap is every route's middleware: the access log, the metrics, the
// bearer check, the body bound, the per-request timeout and the panic
// recovery (a 500 with a log line; the server keeps serving).
func (s *Server) wrap(route string, auth bool, h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.met.inFlight.Inc()
		defer s.met.inFlight.Dec()
		w := &statusWriter{ResponseWriter: rw}
		ri := &reqInfo{}
		ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), infoKey{}, ri), s.cfg.RequestTimeout)
		defer cancel()
		r = r.WithContext(ctx)
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("handler panic", "route", route, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if !w.wrote {
					writeError(w, &apiError{Status: http.StatusInternalServerError, Type: typeServer, Message: "internal error: the handler failed; the server keeps serving (see its log)"})
				}
			}
			d := time.Since(start)
			code := w.code()
			if errors.Is(context.Cause(r.Context()), context.Canceled) { // the client went away, mid-stream too
				code = 499
			}
			s.met.request(route, ri.model, code, d)
			s.log.Info("request", "method", r.Method, "path", r.URL.Path, "route", route, "model", ri.model,
				"status", code, "bytes", w.n, "duration_ms", float64(d.Microseconds())/1000, "remote", r.RemoteAddr)
		}()
		if auth && len(s.keys) > 0 && !s.authorized(r) {
			rw.Header().Set("WWW-Authenticate", `Bearer realm="zoo"`)
			writeError(w, &apiError{Status: http.StatusUnauthorized, Type: typeAuth, Message: "missing or wrong API key: send Authorization: Bearer KEY"})
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(rw, r.Body, s.cfg.MaxBodyBytes)
		}
		if err := h(w, r); err != nil {
			if w.wrote { // a stream already started: its error went into it
				return
			}
			writeError(w, err)
		}
	})
}

func (s *Server) authorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	good := false
	for _, k := range s.keys {
		if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), k) == 1 {
			good = true
		}
	}
	return good
}

// model finds the model called name, which must serve one of tasks
// (none: any); it records the name for the log.
func (s *Server) model(r *http.Request, name, param string, tasks ...string) (*model, error) {
	if name == "" {
		return nil, badRequest(param, "no model: give %q, one of: %s", param, strings.Join(s.names, ", "))
	}
	m, ok := s.models[name]
	if !ok {
		return nil, &apiError{Status: http.StatusNotFound, Type: typeNotFound, Param: nullable(param),
			Message: fmt.Sprintf("unknown model %q: this server has %s", name, strings.Join(s.names, ", "))}
	}
	info(r).model = name
	if len(tasks) > 0 && !slices.Contains(tasks, m.task) {
		return nil, &apiError{Status: http.StatusBadRequest, Type: typeInvalid, Param: nullable(param),
			Message: fmt.Sprintf("model %q does %s, not %s: use a model of that task", name, m.task, strings.Join(tasks, " or "))}
	}
	return m, nil
}

// statusWriter records the status and size of an answer; it flushes
// (server-sent events) and unwraps for http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status int
	n      int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += n
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.status
}

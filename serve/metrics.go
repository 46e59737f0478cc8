package serve

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus metrics (the zoo_serve_ prefix).
type metrics struct {
	requests *prometheus.CounterVec   // route, model, code
	latency  *prometheus.HistogramVec // route, model
	batch    *prometheus.HistogramVec // model
	queue    *prometheus.GaugeVec     // model
	tokens   *prometheus.CounterVec   // model
	genTime  *prometheus.CounterVec   // model: seconds spent generating
	inFlight prometheus.Gauge

	running      *prometheus.GaugeVec // model: sequences in the running batch
	tokensPerSec *prometheus.GaugeVec // model: the running batch's tokens in the last second
}

func newMetrics(reg *prometheus.Registry) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zoo_serve_requests_total",
			Help: "Requests answered, by route, model and HTTP status (499: the client went away)."}, []string{"route", "model", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "zoo_serve_request_duration_seconds",
			Help:    "Time from a request's arrival to its answer's end, by route and model.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"route", "model"}),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "zoo_serve_batch_size",
			Help:    "Texts per forward pass of the dynamic batcher, or sequences per decoding step of a running batch, by model.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128}}, []string{"model"}),
		queue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "zoo_serve_queue_depth",
			Help: "Requests waiting for a model (a batch or a generation slot), by model."}, []string{"model"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zoo_serve_generated_tokens_total",
			Help: "Tokens generated, by model; its rate over zoo_serve_generation_seconds_total's is tokens/s per stream."}, []string{"model"}),
		genTime: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zoo_serve_generation_seconds_total",
			Help: "Seconds spent decoding (summed over concurrent generations), by model."}, []string{"model"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "zoo_serve_requests_in_flight",
			Help: "Requests being served."}),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "zoo_serve_running_sequences",
			Help: "Sequences in a generation model's running batch (continuous batching), by model."}, []string{"model"}),
		tokensPerSec: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "zoo_serve_batch_tokens_per_second",
			Help: "Tokens a generation model's running batch made per second, over the last second it ran, by model."}, []string{"model"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.batch, m.queue, m.tokens, m.genTime, m.inFlight, m.running, m.tokensPerSec} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) request(route, model string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, model, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(route, model).Observe(d.Seconds())
}

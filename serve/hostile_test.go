package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pngBomb is a PNG whose header says w×h pixels (its data is a stub):
// what a decompression bomb looks like before it is decoded.
func pngBomb(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.WriteString(typ)
		b.Write(data)
		_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	chunk("IEND", nil)
	return b.Bytes()
}

// TestHostileRequests: each bad request is a 4xx JSON error
// {"error": {"message", "type", "param"}} naming the problem, and the
// server keeps serving after all of them.
func TestHostileRequests(t *testing.T) {
	dirs := testCheckpoints(t)
	_, url := startServer(t, dirs, Config{MaxBodyBytes: 64 << 10, MaxImagePixels: 1 << 20, MaxInputs: 4})
	long := strings.Repeat("the cat sat on the mat ", 20) // 120 words; the tiny BERT takes 32 tokens
	cases := []struct {
		name, path, body, contentType string
		status                        int
		message, param                string
	}{
		{"malformed JSON", "/models/cls", `{"inputs": "the cat`, "", 400, "malformed JSON", ""},
		{"not JSON", "/v1/completions", `hello`, "", 400, "malformed JSON at byte 1", ""},
		{"two JSON values", "/models/cls", `{"inputs": "a"} {}`, "", 400, "more than one JSON value", ""},
		{"empty body", "/v1/embeddings", ``, "", 400, "the body is empty", ""},
		{"wrong type of inputs", "/models/cls", `{"inputs": 3}`, "", 400, "inputs must be a string or an array of strings", "inputs"},
		{"wrong type of a field", "/v1/completions", `{"model": "gpt", "prompt": "a", "max_tokens": "ten"}`, "", 400, `"max_tokens" must be an integer`, "max_tokens"},
		{"wrong type of parameters", "/models/cls", `{"inputs": "a", "parameters": [1]}`, "", 400, "parameters", "parameters"},
		{"wrong type of a parameter", "/models/cls", `{"inputs": "a", "parameters": {"top_k": "two"}}`, "", 400, "parameters.top_k must be an integer", "parameters.top_k"},
		{"empty inputs", "/models/cls", `{"inputs": ""}`, "", 422, "inputs is an empty text", "inputs"},
		{"empty array", "/models/ner", `{"inputs": []}`, "", 422, "inputs is an empty array", "inputs"},
		{"an empty text of several", "/v1/embeddings", `{"model": "feat", "input": ["a", " "]}`, "", 422, "input[1] is an empty text", "input"},
		{"no inputs", "/models/cls", `{}`, "", 422, "no inputs", "inputs"},
		{"empty messages", "/v1/chat/completions", `{"model": "gpt", "messages": []}`, "", 422, "messages is empty", "messages"},
		{"too many inputs", "/models/cls", `{"inputs": ["a", "b", "c", "d", "e"]}`, "", 413, "at most 4 per request", "inputs"},
		{"unknown model", "/models/nope", `{"inputs": "a"}`, "", 404, `unknown model "nope"`, "model"},
		{"unknown OpenAI model", "/v1/completions", `{"model": "nope", "prompt": "a"}`, "", 404, `unknown model "nope"`, "model"},
		{"no model", "/v1/completions", `{"prompt": "a"}`, "", 400, "no model", "model"},
		{"model of another task", "/v1/embeddings", `{"model": "gpt", "input": "a"}`, "", 400, "does text-generation, not feature-extraction", "model"},
		{"unknown parameter", "/models/cls", `{"inputs": "a", "parameters": {"top_k": 1, "temperature": 2}}`, "", 422, `unknown parameter "temperature" for text-classification`, "parameters.temperature"},
		{"unknown field", "/v1/chat/completions", `{"model": "gpt", "messages": [{"role": "user", "content": "a"}], "tools": []}`, "", 422, `unknown parameter "tools"`, "tools"},
		{"unknown message field", "/v1/chat/completions", `{"model": "gpt", "messages": [{"role": "user", "content": "a", "mood": 1}]}`, "", 422, `unknown parameter "mood"`, "mood"},
		{"unsupported n", "/v1/completions", `{"model": "gpt", "prompt": "a", "n": 3}`, "", 422, "one choice per prompt", "n"},
		{"input too long", "/models/cls", `{"inputs": "` + long + `"}`, "", 413, "takes at most 32: shorten it, or set parameters.truncation", "inputs"},
		{"input too long for fill-mask", "/models/mlm", `{"inputs": "` + long + ` [MASK]"}`, "", 413, "at most 32", "inputs"},
		{"embedding input too long", "/v1/embeddings", `{"model": "feat", "input": "` + long + `"}`, "", 413, "at most 32", "input"},
		{"prompt too long", "/v1/completions", `{"model": "gpt", "prompt": "` + long + `"}`, "", 413, "context of 32 tokens", "prompt"},
		{"fill-mask without a mask", "/models/mlm", `{"inputs": "the cat"}`, "", 422, "[MASK]", "inputs"},
		{"max_tokens 1e9", "/v1/completions", `{"model": "gpt", "prompt": "a", "max_tokens": 1000000000}`, "", 422, "max_tokens is 1000000000; it must be from 1 to 4096", "max_tokens"},
		{"max_new_tokens 1e9", "/models/gpt", `{"inputs": "a", "parameters": {"max_new_tokens": 1e9}}`, "", 422, "it must be from 1 to 4096", "parameters.max_new_tokens"},
		{"max_completion_tokens 0", "/v1/chat/completions", `{"model": "gpt", "messages": [{"role": "user", "content": "a"}], "max_completion_tokens": 0}`, "", 422, "max_completion_tokens is 0", "max_completion_tokens"},
		{"temperature out of range", "/v1/completions", `{"model": "gpt", "prompt": "a", "temperature": 5}`, "", 422, "temperature is 5", "temperature"},
		{"body too large", "/models/cls", `{"inputs": "` + strings.Repeat("a", 70<<10) + `"}`, "", 413, "larger than 65536 bytes", ""},
		{"image that does not decode", "/models/vit", "not an image at all", "image/png", 422, "the image does not decode", "inputs"},
		{"base64 image that does not decode", "/models/vit", `{"inputs": "` + base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n nonsense")) + `"}`, "", 422, "does not decode", "inputs"},
		{"not base64", "/models/vit", `{"inputs": "%%%"}`, "", 422, "not base64", "inputs"},
		{"decompression bomb", "/models/vit", string(pngBomb(100000, 100000)), "image/png", 413, "100000×100000 pixels; at most 1048576", "inputs"},
		{"unknown route", "/v2/things", `{}`, "", 404, "no route POST /v2/things", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ct := c.contentType
			if ct == "" {
				ct = "application/json"
			}
			code, body, _ := post(t, url+c.path, c.body, "Content-Type", ct)
			require.Equal(t, c.status, code, string(body))
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			var raw map[string]map[string]any
			require.NoError(t, json.Unmarshal(body, &raw), string(body))
			for _, k := range []string{"message", "type", "param"} {
				require.Contains(t, raw["error"], k)
			}
			require.NoError(t, json.Unmarshal(body, &e))
			require.Contains(t, e.Error.Message, c.message)
			require.NotEmpty(t, e.Error.Type)
			if c.param == "" {
				require.Nil(t, e.Error.Param)
			} else {
				require.NotNil(t, e.Error.Param, string(body))
				require.Equal(t, c.param, *e.Error.Param)
			}
		})
	}
	resp, err := http.Get(url + "/v1/chat/completions")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "POST", resp.Header.Get("Allow"))
	// Truncation on request, and the server still serves.
	code, body, _ := post(t, url+"/models/cls", `{"inputs": "`+long+`", "parameters": {"truncation": true}}`)
	require.Equal(t, http.StatusOK, code, string(body))
	code, body, _ = post(t, url+"/models/vit", string(testPNG(t, 12, 10)), "Content-Type", "image/png")
	require.Equal(t, http.StatusOK, code, string(body))
	code, body, _ = post(t, url+"/v1/completions", `{"model": "gpt", "prompt": "the cat", "max_tokens": 2}`)
	require.Equal(t, http.StatusOK, code, string(body))
}

// TestAuth: with API keys every route but /health and /ready wants one.
func TestAuth(t *testing.T) {
	dirs := testCheckpoints(t)
	_, url := startServer(t, map[string]string{"cls": dirs["cls"]}, Config{APIKeys: []string{"k1", " k2 "}})
	code, body, h := post(t, url+"/models/cls", `{"inputs": "a"}`)
	require.Equal(t, http.StatusUnauthorized, code, string(body))
	require.Contains(t, string(body), "authentication_error")
	require.Equal(t, `Bearer realm="zoo"`, h.Get("WWW-Authenticate"))
	code, _, _ = post(t, url+"/models/cls", `{"inputs": "a"}`, "Authorization", "Bearer wrong")
	require.Equal(t, http.StatusUnauthorized, code)
	code, _, _ = post(t, url+"/models/cls", `{"inputs": "a"}`, "Authorization", "Bearer k2")
	require.Equal(t, http.StatusOK, code)
	for path, want := range map[string]int{"/health": 200, "/ready": 200, "/metrics": 401, "/v1/models": 401} {
		resp, err := http.Get(url + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, path)
	}
}

// TestPanicRecovery: a handler that panics answers 500 JSON with a log
// line, and the server goes on.
func TestPanicRecovery(t *testing.T) {
	dirs := testCheckpoints(t)
	var log bytes.Buffer
	var mu sync.Mutex
	s, err := New(context.Background(), Config{Checkpoints: []Checkpoint{{Name: "cls", Dir: dirs["cls"]}},
		Logger: slogTo(&log, &mu)})
	require.NoError(t, err)
	defer s.Close()
	s.mux.Handle("POST /boom", s.wrap("POST /boom", false, func(w http.ResponseWriter, r *http.Request) error { panic("kaboom") }))
	ts := httptest.NewServer(s)
	defer ts.Close()
	code, body, _ := post(t, ts.URL+"/boom", `{}`)
	require.Equal(t, http.StatusInternalServerError, code)
	require.Contains(t, string(body), `"type":"server_error"`)
	mu.Lock()
	require.Contains(t, log.String(), "handler panic")
	require.Contains(t, log.String(), "kaboom")
	mu.Unlock()
	code, _, _ = post(t, ts.URL+"/models/cls", `{"inputs": "a"}`)
	require.Equal(t, http.StatusOK, code)
}

// TestQueueFullAndTimeout: with one generation slot (decoding on its
// own, MaxBatch 1) or one row of the running batch (continuous batching)
// and a queue of one, a third generation is 429 with Retry-After; a
// request past the per-request timeout is 408.
func TestQueueFullAndTimeout(t *testing.T) {
	dirs := testCheckpoints(t)
	// The running batch holds sequences that fit the context: a GPT of
	// 1024 positions, and A's 1000 tokens, instead of the sliding window.
	for _, c := range []struct {
		dir, maxA string
		cfg       Config
	}{
		{dirs["gpt"], "4096", Config{MaxBatch: 1, MaxConcurrent: 1, MaxQueue: 1, RequestTimeout: 20 * time.Second}},
		{longGPT(t), "1000", Config{MaxRunning: 1, MaxQueue: 1, RequestTimeout: 20 * time.Second}},
	} {
		queueFullOnce(t, c.dir, c.maxA, c.cfg)
	}
	s2, url2 := startServer(t, map[string]string{"gpt": dirs["gpt"]}, Config{RequestTimeout: 30 * time.Millisecond})
	endless(s2, "gpt")
	code, body, _ := post(t, url2+"/v1/completions", `{"model": "gpt", "prompt": "the cat", "max_tokens": 4096}`)
	require.Equal(t, http.StatusRequestTimeout, code, string(body))
	require.Contains(t, string(body), "timeout_error")
}

func queueFullOnce(t *testing.T, dir, maxA string, cfg Config) {
	s, url := startServer(t, map[string]string{"gpt": dir}, cfg)
	m := endless(s, "gpt")
	// A: streams a long generation, holding the slot.
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	reqA, _ := http.NewRequestWithContext(ctxA, http.MethodPost, url+"/v1/completions",
		strings.NewReader(`{"model": "gpt", "prompt": "the cat", "max_tokens": `+maxA+`, "stream": true}`))
	respA, err := http.DefaultClient.Do(reqA)
	require.NoError(t, err)
	defer respA.Body.Close()
	_, err = bufio.NewReader(respA.Body).ReadString('\n')
	require.NoError(t, err)
	// B: waits in the queue.
	doneB := make(chan int, 1)
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	go func() {
		req, _ := http.NewRequestWithContext(ctxB, http.MethodPost, url+"/v1/completions", strings.NewReader(`{"model": "gpt", "prompt": "a", "max_tokens": 2}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			doneB <- 0
			return
		}
		resp.Body.Close()
		doneB <- resp.StatusCode
	}()
	require.Eventually(t, func() bool { return m.waiting.Load() == 1 }, 5*time.Second, time.Millisecond)
	// C: the queue is full.
	code, body, h := post(t, url+"/models/gpt", `{"inputs": "a", "parameters": {"max_new_tokens": 2}}`)
	require.Equal(t, http.StatusTooManyRequests, code, string(body))
	require.Equal(t, "1", h.Get("Retry-After"))
	require.Contains(t, string(body), "overloaded_error")
	cancelA() // A's client goes: its generation stops, B runs
	require.Equal(t, http.StatusOK, <-doneB)
}

// TestDisconnectMidStream: a client that goes away mid-stream stops its
// generation (its context is cancelled): the slot is freed long before
// the 4096 tokens it asked for.
func TestDisconnectMidStream(t *testing.T) {
	dirs := testCheckpoints(t)
	s, url := startServer(t, map[string]string{"gpt": dirs["gpt"]}, Config{MaxConcurrent: 1})
	m := endless(s, "gpt")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions",
		strings.NewReader(`{"model": "gpt", "prompt": "the cat", "max_tokens": 4096, "stream": true}`))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	r := bufio.NewReader(resp.Body)
	for range 3 { // a few chunks
		_, err := r.ReadString('\n')
		require.NoError(t, err)
	}
	cancel()
	resp.Body.Close()
	require.Eventually(t, func() bool { return len(m.slots) == 0 && gaugeValue(t, s, "zoo_serve_running_sequences") == 0 }, 10*time.Second, time.Millisecond)
	tokens := counterValue(t, s, "zoo_serve_generated_tokens_total")
	require.Less(t, tokens, 4096.0, "the generation stopped when its client went")
	require.Eventually(t, func() bool {
		mfs, err := s.cfg.Registry.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if mf.GetName() == "zoo_serve_requests_total" && len(m.GetLabel()) > 0 && m.GetLabel()[0].GetValue() == "499" {
					return true
				}
			}
		}
		return false
	}, 5*time.Second, time.Millisecond, "the request is counted as 499, the client's going")
	code, body, _ := post(t, url+"/v1/completions", `{"model": "gpt", "prompt": "a", "max_tokens": 2}`)
	require.Equal(t, http.StatusOK, code, string(body))
}

// endless makes model name's greedy generations run to their
// max_tokens: the tiny GPT would otherwise end at its EOS token within a
// few hundred tokens. Call it before the first request.
func endless(s *Server, name string) *model {
	m := s.models[name]
	m.gen.defaults.EOS = nil
	return m
}

// gaugeValue is the first series of gauge name (0 when it has none).
func gaugeValue(t testing.TB, s *Server, name string) float64 {
	mfs, err := s.cfg.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

func counterValue(t testing.TB, s *Server, name string) float64 {
	mfs, err := s.cfg.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// TestSlowloris: connections that send nothing (or half a header) do not
// stop the server: a real request is answered at once while they hang,
// and the server drops them after ReadHeaderTimeout. 200 connections,
// which CI's two cores take.
func TestSlowloris(t *testing.T) {
	dirs := testCheckpoints(t)
	s, err := New(context.Background(), Config{Checkpoints: []Checkpoint{{Name: "cls", Dir: dirs["cls"]}}, Logger: quiet,
		ReadHeaderTimeout: 300 * time.Millisecond, MaxHeaderBytes: 4 << 10})
	require.NoError(t, err)
	defer s.Close()
	srv := s.HTTPServer("127.0.0.1:0")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	addr := ln.Addr().String()
	var conns []net.Conn
	for i := range 200 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		if i%2 == 1 {
			_, _ = io.WriteString(c, "POST /models/cls HTTP/1.1\r\nHost: x\r\n") // and never the rest
		}
		conns = append(conns, c)
	}
	start := time.Now()
	resp, err := http.Post("http://"+addr+"/models/cls", "application/json", strings.NewReader(`{"inputs": "the cat"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Less(t, time.Since(start), 2*time.Second)
	// Each idle connection is closed by the server: a read ends.
	for _, c := range conns {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, err := io.ReadAll(c)
		require.NoError(t, err, "the server closed the connection (EOF), not our deadline")
		c.Close()
	}
	// A header over MaxHeaderBytes is refused.
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/health", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 8<<10))
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for a command writing it while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeGracefulShutdown runs zoo serve on two checkpoints, streams a
// completion, and sends the interrupt mid-stream: the stream still ends
// with [DONE], the command returns 0, and the port is closed.
func TestServeGracefulShutdown(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	old := signalContext
	signalContext = func() (context.Context, context.CancelFunc) { return ctx, func() {} }
	defer func() { signalContext = old }()
	keys := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(keys, []byte("# keys\nsecret\n"), 0o600))
	var out, errb syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"serve", "--checkpoint", "tiny=../../models/gpt/testdata/pipeline", "--checkpoint", "../../models/seq2seq/testdata/pipeline",
			"--addr", "127.0.0.1:0", "--api-key-file", keys, "--log-format", "json", "--pprof", "127.0.0.1:0"}, &out, &errb)
	}()
	var addr string
	require.Eventually(t, func() bool {
		m := regexp.MustCompile(`listening on (\S+): `).FindStringSubmatch(out.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 30*time.Second, 10*time.Millisecond, "stdout: %s; stderr: %s", &out, &errb)
	require.Contains(t, out.String(), "tiny (text-generation), pipeline (translation)")
	// --pprof: Go's profiles on their own listener, not on the API's.
	m := regexp.MustCompile(`profiles on http://(\S+)/debug/pprof/`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	pprofAddr := m[1]
	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(b), "goroutine")
	preq, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/debug/pprof/", nil)
	preq.Header.Set("Authorization", "Bearer secret")
	resp, err = http.DefaultClient.Do(preq)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "no profiles on the API's address")

	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/completions",
		strings.NewReader(`{"model": "tiny", "prompt": "one two three", "max_tokens": 4000, "stream": true}`))
	req.Header.Set("Authorization", "Bearer secret")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r := bufio.NewReader(resp.Body)
	first, err := r.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(first, "data: {"), first)
	interrupt() // SIGINT mid-stream
	var last string
	for {
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, "data: ") {
			last = line
		}
		if err != nil {
			break
		}
	}
	require.Equal(t, "data: [DONE]\n", last, "the stream in flight finished")
	select {
	case c := <-code:
		require.Equal(t, 0, c, errb.String())
	case <-time.After(30 * time.Second):
		t.Fatal("zoo serve did not stop")
	}
	require.Contains(t, out.String(), "shutting down")
	require.Contains(t, out.String(), "zoo serve: stopped")
	require.Contains(t, errb.String(), `"msg":"request"`, "the JSON access log")
	require.Contains(t, errb.String(), `"route":"POST /v1/completions"`)
	_, err = net.DialTimeout("tcp", addr, time.Second)
	require.Error(t, err, "the port is closed")
	_, err = net.DialTimeout("tcp", pprofAddr, time.Second)
	require.Error(t, err, "the profiles' port is closed")
}

func TestServeUsage(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 2, run([]string{"serve"}, &out, &errb))
	require.Contains(t, errb.String(), "--checkpoint is required")
	errb.Reset()
	require.Equal(t, 2, run([]string{"serve", "--checkpoint", "x", "--log-format", "xml"}, &out, &errb))
	require.Contains(t, errb.String(), `--log-format "xml"`)
	errb.Reset()
	require.Equal(t, 1, run([]string{"serve", "--checkpoint", "../../models/gpt/testdata/pipeline", "--api-key-file", "/nonexistent"}, &out, &errb))
	require.Contains(t, errb.String(), "--api-key-file")
	out.Reset()
	require.Equal(t, 0, run([]string{"serve", "-h"}, &out, &errb))
	require.Contains(t, out.String(), "POST /v1/chat/completions")
}

package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/serve"
)

// Serve a GPT-2 checkpoint and ask it for a completion, OpenAI's way,
// and for a generation, Hugging Face's way.
func ExampleNew() {
	s, err := serve.New(context.Background(), serve.Config{
		Checkpoints: []serve.Checkpoint{{Name: "tiny-gpt", Dir: "../models/gpt/testdata/pipeline"}},
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)), // no access log here
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s) // or s.HTTPServer(":8080").ListenAndServe()
	defer ts.Close()

	resp, err := http.Post(ts.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"model": "tiny-gpt", "prompt": "the cat", "max_tokens": 5, "temperature": 0}`))
	if err != nil {
		log.Fatal(err)
	}
	var c struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Printf("%q %s\n", c.Choices[0].Text, c.Choices[0].FinishReason)

	resp, err = http.Post(ts.URL+"/models/tiny-gpt", "application/json",
		strings.NewReader(`{"inputs": "the cat", "parameters": {"max_new_tokens": 5}}`))
	if err != nil {
		log.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(b))
	// Output:
	// "ssssm" length
	// [{"generated_text":"the catssssm"}]
}

// Serve on a listener with the slowloris bounds, and shut down
// gracefully: /ready fails first, then the requests in flight finish.
func ExampleServer_HTTPServer() {
	s, err := serve.New(context.Background(), serve.Config{
		Checkpoints: []serve.Checkpoint{{Dir: "../models/seq2seq/testdata/pipeline"}},
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := s.HTTPServer("127.0.0.1:0") // ReadHeaderTimeout, IdleTimeout, MaxHeaderBytes set
	ln, err := net.Listen("tcp", srv.Addr)
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)

	resp, err := http.Get("http://" + ln.Addr().String() + "/ready")
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("ready:", resp.StatusCode)

	// On SIGTERM:
	s.Drain() // /ready answers 503 from now on
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil { // waits for the requests in flight
		log.Fatal(err)
	}
	s.Close()
	fmt.Println("stopped")
	// Output:
	// ready: 200
	// stopped
}

// Each checkpoint's model name and task.
func ExampleServer_Models() {
	s, err := serve.New(context.Background(), serve.Config{
		Checkpoints: []serve.Checkpoint{
			{Name: "marian", Dir: "../models/seq2seq/testdata/pipeline"},
			{Dir: "../models/gpt/testdata/classifier"}, // named after its directory
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for _, m := range s.Models() {
		fmt.Println(m.Name, m.Family, m.Task)
	}
	// Output:
	// marian seq2seq translation
	// classifier gpt text-classification
}

// The task a checkpoint serves unless told otherwise: its head's.
func ExampleTaskForCheckpoint() {
	for _, dir := range []string{"../models/gpt/testdata/pipeline", "../models/vit/testdata/parity"} {
		ck, err := models.Open(dir)
		if err != nil {
			log.Fatal(err)
		}
		task, err := serve.TaskForCheckpoint(ck)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ck.Architectures, task)
	}
	// Output:
	// [GPT2LMHeadModel] text-generation
	// [ViTForImageClassification] image-classification
}

// The web page the server answers at GET /, for a service that mounts it
// under a path of its own: self-contained HTML, its script inline.
func ExamplePage() {
	page := serve.Page()
	fmt.Println(strings.HasPrefix(string(page), "<!doctype html>"), strings.Contains(string(page), "<script>"))
	// Output: true true
}

// Continuous batching: concurrent generations share the model's running
// batch (MaxRunning rows), joining and leaving between decoding steps;
// each text is the one the request gets alone.
func ExampleConfig_continuousBatching() {
	s, err := serve.New(context.Background(), serve.Config{
		Checkpoints: []serve.Checkpoint{{Name: "tiny-gpt", Dir: "../models/gpt/testdata/pipeline"}},
		MaxRunning:  4, // sequences decoding together; more wait in the queue (MaxQueue)
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s)
	defer ts.Close()
	prompts := []string{"the cat", "a dog", "mice", "the hen sat"}
	texts := make([]string, len(prompts))
	var wg sync.WaitGroup
	for i, p := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(ts.URL+"/v1/completions", "application/json",
				strings.NewReader(fmt.Sprintf(`{"model": "tiny-gpt", "prompt": %q, "max_tokens": 6, "temperature": 0}`, p)))
			if err != nil {
				log.Fatal(err)
			}
			defer resp.Body.Close()
			var c struct {
				Choices []struct{ Text string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
				log.Fatal(err)
			}
			texts[i] = c.Choices[0].Text
		}()
	}
	wg.Wait()
	for i, p := range prompts {
		fmt.Printf("%s → %q\n", p, texts[i])
	}
	// Output:
	// the cat → "ssssmp"
	// a dog → "ssi  a"
	// mice → "h . . "
	// the hen sat → "ehgshs"
}

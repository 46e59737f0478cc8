package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/models/llama"
)

// longGPT is a GPT checkpoint with the character tokenizer of
// models/gpt/testdata/pipeline and a context of 1024 positions, random
// weights of std 0.5 (logits far apart: no near-ties between the best
// tokens for float32 rounding to flip), no EOS token (every text runs to
// its max_tokens) and greedy decoding by default.
func longGPT(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "long")
	cfg := gpt.Micro()
	cfg.VocabSize, cfg.NPositions, cfg.BOSTokenID, cfg.EOSTokenID = 19, 1024, 0, 0
	m, err := gpt.New(cfg, layers.WithSeed(11), layers.WithInitStd(0.5))
	require.NoError(t, err)
	require.NoError(t, m.Save(dir))
	tok, err := os.ReadFile("../models/gpt/testdata/pipeline/tokenizer.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"do_sample": false, "max_new_tokens": 20}`), 0o644))
	return dir
}

// greedy is complete's extra field for greedy decoding.
const greedy = `, "temperature": 0`

// complete asks /v1/completions for prompt with the extra fields, and
// returns the text.
func complete(t testing.TB, url, prompt string, maxTokens int, extra string) string {
	t.Helper()
	code, body, _ := post(t, url+"/v1/completions", fmt.Sprintf(`{"model": "long", "prompt": %q, "max_tokens": %d%s}`, prompt, maxTokens, extra))
	require.Equal(t, http.StatusOK, code, string(body))
	var r struct {
		Choices []struct{ Text string }
	}
	require.NoError(t, json.Unmarshal(body, &r))
	return r.Choices[0].Text
}

// TestContinuousBatchingEquivalence: N concurrent greedy requests, of
// prompts of different lengths (across the 16-token prefill buckets) and
// different max_tokens, joining the running batch at different times,
// get the texts each gets served alone, token for token: alone through
// the server with batching off (MaxBatch 1, part 1's path), and alone
// through the library (gpt.TextGeneration), both with and without
// streaming. The running batch held several sequences at once.
func TestContinuousBatchingEquivalence(t *testing.T) {
	dir := longGPT(t)
	type req struct {
		prompt string
		max    int
		delay  time.Duration
	}
	reqs := []req{
		{"the cat", 40, 0},
		{"a", 25, 0},
		{"the red hen sat on the mat and the dog ran on", 30, 2 * time.Millisecond},
		{"dogs", 60, 5 * time.Millisecond},
		{"a cat sat, and a dog sat. the hen ran to the tree, and the cat did not see the end", 17, 10 * time.Millisecond},
		{"so", 3, 15 * time.Millisecond},
		{"the dog and the cat", 50, 20 * time.Millisecond},
		{"mice", 33, 30 * time.Millisecond},
	}
	p, err := gpt.LoadTextGeneration(dir)
	require.NoError(t, err)
	_, alone := startServer(t, map[string]string{"long": dir}, Config{MaxBatch: 1})
	want := make([]string, len(reqs))
	for i, r := range reqs {
		cfg := p.Defaults()
		cfg.MaxNewTokens, cfg.Temperature, cfg.NewTextOnly = r.max, 0, true
		out, err := p.Generate(context.Background(), []string{r.prompt}, cfg)
		require.NoError(t, err)
		want[i] = out[0].Text
		require.Len(t, out[0].Tokens, r.max, "no EOS: every text runs to its max_tokens")
		require.Equal(t, want[i], complete(t, alone, r.prompt, r.max, greedy), "request %d served alone, unbatched", i)
	}
	s, url := startServer(t, map[string]string{"long": dir}, Config{MaxRunning: 4, BatchWait: 20 * time.Millisecond})
	for _, stream := range []bool{false, true} {
		got := make([]string, len(reqs))
		var wg sync.WaitGroup
		for i, r := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(r.delay)
				if stream {
					got[i] = streamCompletion(t, url, r.prompt, r.max)
				} else {
					got[i] = complete(t, url, r.prompt, r.max, greedy)
				}
			}()
		}
		wg.Wait()
		for i := range reqs {
			require.Equal(t, want[i], got[i], "request %d (stream %v): batched against alone", i, stream)
		}
	}
	require.Greater(t, histogramMax(t, s, "zoo_serve_batch_size"), 1.0, "the running batch held several sequences at once")
	require.Equal(t, 0.0, gaugeValue(t, s, "zoo_serve_running_sequences"), "every sequence left")
}

// streamCompletion streams /v1/completions and joins the text chunks.
func streamCompletion(t testing.TB, url, prompt string, maxTokens int) string {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/completions",
		strings.NewReader(fmt.Sprintf(`{"model": "long", "prompt": %q, "max_tokens": %d, "temperature": 0, "stream": true}`, prompt, maxTokens)))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct{ Text string }
		}
		require.NoError(t, json.Unmarshal([]byte(line), &c), line)
		if len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Text)
		}
	}
	return text.String()
}

// histogramMax is the largest bucket bound below which not every
// observation of histogram name falls: > 1 means some observation was
// over 1.
func histogramMax(t testing.TB, s *Server, name string) float64 {
	mfs, err := s.cfg.Registry.Gather()
	require.NoError(t, err)
	top := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			for _, b := range h.GetBucket() {
				if b.GetCumulativeCount() < h.GetSampleCount() {
					top = max(top, b.GetUpperBound()+1)
				}
			}
		}
	}
	return top
}

// TestContinuousBatchingCancel: a client that goes away mid-stream
// leaves the batch (its row is freed, the model's running gauge falls)
// and the other sequences' answers are unchanged; sampled requests with
// a seed give the library's text for that seed whatever runs beside them;
// the tokens-per-second gauge counted them.
func TestContinuousBatchingCancel(t *testing.T) {
	dir := longGPT(t)
	p, err := gpt.LoadTextGeneration(dir)
	require.NoError(t, err)
	lib := func(prompt string, n int, temp float64, seed uint64) string {
		cfg := p.Defaults()
		cfg.MaxNewTokens, cfg.Temperature, cfg.Seed, cfg.NewTextOnly = n, temp, seed, true
		out, err := p.Generate(context.Background(), []string{prompt}, cfg)
		require.NoError(t, err)
		return out[0].Text
	}
	s, url := startServer(t, map[string]string{"long": dir}, Config{MaxRunning: 4})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions",
		strings.NewReader(`{"model": "long", "prompt": "the cat", "max_tokens": 1000, "stream": true}`))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	r := bufio.NewReader(resp.Body)
	_, err = r.ReadString('\n')
	require.NoError(t, err)
	var wg sync.WaitGroup
	got := make([]string, 3)
	wg.Add(3)
	go func() { defer wg.Done(); got[0] = complete(t, url, "a dog", 80, greedy) }()
	go func() { defer wg.Done(); got[1] = complete(t, url, "the hen", 60, `, "seed": 7, "temperature": 0.8`) }()
	go func() {
		defer wg.Done()
		time.Sleep(5 * time.Millisecond)
		cancel() // mid-way through the others
		resp.Body.Close()
		got[2] = complete(t, url, "mice ran", 30, greedy)
	}()
	wg.Wait()
	require.Equal(t, lib("a dog", 80, 0, 0), got[0])
	require.Equal(t, lib("the hen", 60, 0.8, 7), got[1])
	require.Equal(t, lib("mice ran", 30, 0, 0), got[2])
	require.Eventually(t, func() bool { return gaugeValue(t, s, "zoo_serve_running_sequences") == 0 }, 10*time.Second, time.Millisecond)
	require.Less(t, counterValue(t, s, "zoo_serve_generated_tokens_total"), 1000.0+80+60+30, "the cancelled stream stopped early")
	// The gauge shows the last whole second's rate: run a second's worth.
	for start := time.Now(); time.Since(start) < 1100*time.Millisecond; {
		complete(t, url, "a", 200, greedy)
	}
	complete(t, url, "a", 2, greedy)
	require.Greater(t, gaugeValue(t, s, "zoo_serve_batch_tokens_per_second"), 0.0)
}

// TestContinuousBatchingLlama: concurrent chats of a LLaMA-family model
// (its chat template, rotary positions, grouped-query attention) share
// the running batch, each answer llama.Chat's alone.
func TestContinuousBatchingLlama(t *testing.T) {
	lm, _ := tinyLlama(t)
	p, err := llama.LoadTextGeneration(lm)
	require.NoError(t, err)
	s, url := startServer(t, map[string]string{"llama": lm}, Config{MaxRunning: 4, BatchWait: 20 * time.Millisecond})
	chats := []struct {
		content string
		max     int
	}{{"hello there", 20}, {"what is the cat doing on the mat today", 12}, {"a", 25}, {"tell me about dogs and cats and the park", 16}}
	got := make([]string, len(chats))
	var wg sync.WaitGroup
	for i, c := range chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body, _ := post(t, url+"/v1/chat/completions", fmt.Sprintf(`{"model": "llama", "messages": [{"role": "user", "content": %q}], "max_tokens": %d}`, c.content, c.max))
			require.Equal(t, http.StatusOK, code, string(body))
			var r chatCompletion
			require.NoError(t, json.Unmarshal(body, &r))
			got[i] = r.Choices[0].Message.Content
		}()
	}
	wg.Wait()
	for i, c := range chats {
		cfg := p.Defaults()
		cfg.MaxNewTokens = c.max
		want, err := p.Chat(context.Background(), []models.ChatMessage{{Role: "user", Content: c.content}}, cfg)
		require.NoError(t, err)
		require.Equal(t, want.Text, got[i], "chat %d", i)
	}
	require.Greater(t, histogramMax(t, s, "zoo_serve_batch_size"), 1.0, "the running batch held several sequences at once")
}

// TestContinuousBatchingPrompts: requests of several prompts join the
// running batch all together (two such requests on a batch of two rows
// would otherwise each hold a row and wait for the other's forever), and
// one of more prompts than the batch has rows decodes on its own; every
// answer is the one served with batching off.
func TestContinuousBatchingPrompts(t *testing.T) {
	dir := longGPT(t)
	reqs := []string{
		`{"inputs": ["the cat", "a dog ran"], "parameters": {"max_new_tokens": 30}}`,
		`{"inputs": ["mice", "so it goes, and the hen"], "parameters": {"max_new_tokens": 25}}`,
		`{"inputs": ["one", "two", "three"], "parameters": {"max_new_tokens": 10}}`,
	}
	_, alone := startServer(t, map[string]string{"long": dir}, Config{MaxBatch: 1})
	want := make([]string, len(reqs))
	for i, r := range reqs {
		code, body, _ := post(t, alone+"/models/long", r)
		require.Equal(t, http.StatusOK, code, string(body))
		want[i] = string(body)
	}
	for round := range 3 {
		_, url := startServer(t, map[string]string{"long": dir}, Config{MaxRunning: 2, RequestTimeout: 20 * time.Second})
		got := make([]string, len(reqs))
		var wg sync.WaitGroup
		for i, r := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, body, _ := post(t, url+"/models/long", r)
				require.Equal(t, http.StatusOK, code, string(body))
				got[i] = string(body)
			}()
		}
		wg.Wait()
		for i := range reqs {
			require.Equal(t, want[i], got[i], "round %d, request %d", round, i)
		}
	}
}

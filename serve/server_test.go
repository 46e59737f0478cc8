package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/models/vit"
)

// quiet is a logger for tests that drops the access log.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startServer serves dirs (by name) with cfg on an httptest listener.
func startServer(t testing.TB, dirs map[string]string, cfg Config) (*Server, string) {
	t.Helper()
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range dirs {
			if !yield(n) {
				return
			}
		}
	}) {
		cfg.Checkpoints = append(cfg.Checkpoints, Checkpoint{Name: n, Dir: dirs[n]})
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	s, err := New(context.Background(), cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close() })
	return s, ts.URL
}

// post sends body (JSON unless contentType says otherwise) and returns
// the status and the answer.
func post(t testing.TB, url, body string, header ...string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b, resp.Header
}

func mustJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// testPNG is an RGB PNG of w×h.
func testPNG(t testing.TB, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 20), uint8(y * 20), 40, 255})
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

// TestHuggingFaceRoutes: POST /models/{name} of every task answers what
// the library's pipeline (zoo predict's call) gives for the same input,
// in the JSON of Hugging Face's inference API.
func TestHuggingFaceRoutes(t *testing.T) {
	ctx := context.Background()
	dirs := testCheckpoints(t)
	_, url := startServer(t, dirs, Config{})
	img := testPNG(t, 8, 8)
	cases := []struct {
		name, model, body string
		lib               func(t *testing.T) any
	}{
		{"text classification top_k 2", "cls", `{"inputs": ["the cat sat on the mat", "paris is in france"], "parameters": {"top_k": 2}}`, func(t *testing.T) any {
			p, err := bert.LoadTextClassification(dirs["cls"])
			require.NoError(t, err)
			p.TopK = 2
			out, err := p.Predict(ctx, []string{"the cat sat on the mat", "paris is in france"})
			require.NoError(t, err)
			return out
		}},
		{"text classification one text", "cls", `{"inputs": "a dog ran"}`, func(t *testing.T) any {
			p, err := bert.LoadTextClassification(dirs["cls"])
			require.NoError(t, err)
			p.TopK = 1
			out, err := p.Predict(ctx, []string{"a dog ran"})
			require.NoError(t, err)
			return out // a list per input, even for one
		}},
		{"GPT-2 text classification", "gcls", `{"inputs": "the cat sat", "parameters": {"top_k": null}}`, func(t *testing.T) any {
			p, err := gpt.LoadTextClassification(dirs["gcls"])
			require.NoError(t, err)
			p.TopK = 0
			out, err := p.Predict(ctx, []string{"the cat sat"})
			require.NoError(t, err)
			return out
		}},
		{"token classification", "ner", `{"inputs": "paris is in france", "parameters": {"aggregation_strategy": "simple"}}`, func(t *testing.T) any {
			p, err := bert.LoadTokenClassification(dirs["ner"])
			require.NoError(t, err)
			out, err := p.Predict(ctx, []string{"paris is in france"})
			require.NoError(t, err)
			require.NotEmpty(t, out[0])
			return out[0]
		}},
		{"question answering", "qa", `{"inputs": {"question": "where is it", "context": "paris is in france"}}`, func(t *testing.T) any {
			p, err := bert.LoadQuestionAnswering(dirs["qa"])
			require.NoError(t, err)
			out, err := p.Predict(ctx, []bert.QAInput{{Question: "where is it", Context: "paris is in france"}})
			require.NoError(t, err)
			return out[0]
		}},
		{"question answering top_k 2", "qa", `{"inputs": [{"question": "where is it", "context": "the cat sat on the mat"}], "parameters": {"top_k": 2}}`, func(t *testing.T) any {
			p, err := bert.LoadQuestionAnswering(dirs["qa"])
			require.NoError(t, err)
			p.TopK = 2
			out, err := p.PredictAll(ctx, []bert.QAInput{{Question: "where is it", Context: "the cat sat on the mat"}})
			require.NoError(t, err)
			require.Len(t, out[0], 2)
			return out
		}},
		{"fill-mask", "mlm", `{"inputs": "the [MASK] sat on the mat", "parameters": {"top_k": 3}}`, func(t *testing.T) any {
			p, err := bert.LoadFillMask(dirs["mlm"])
			require.NoError(t, err)
			p.TopK = 3
			out, err := p.Predict(ctx, []string{"the [MASK] sat on the mat"})
			require.NoError(t, err)
			return out[0][0]
		}},
		{"fill-mask two masks", "mlm", `{"inputs": ["a [MASK] ran in the [MASK]"]}`, func(t *testing.T) any {
			p, err := bert.LoadFillMask(dirs["mlm"])
			require.NoError(t, err)
			out, err := p.Predict(ctx, []string{"a [MASK] ran in the [MASK]"})
			require.NoError(t, err)
			return out
		}},
		{"feature extraction", "feat", `{"inputs": "the cat sat"}`, func(t *testing.T) any {
			p, err := bert.LoadFeatureExtraction(dirs["feat"])
			require.NoError(t, err)
			out, err := p.Predict(ctx, []string{"the cat sat"})
			require.NoError(t, err)
			return [][][]float64{out[0].Hidden}
		}},
		{"text generation", "gpt", `{"inputs": "the cat", "parameters": {"max_new_tokens": 6}}`, func(t *testing.T) any {
			p, err := gpt.LoadTextGeneration(dirs["gpt"])
			require.NoError(t, err)
			cfg := p.Defaults()
			cfg.MaxNewTokens = 6
			out, err := p.Generate(ctx, []string{"the cat"}, cfg)
			require.NoError(t, err)
			return out
		}},
		{"text generation from an empty prompt", "gpt", `{"inputs": "", "parameters": {"max_new_tokens": 3}}`, func(t *testing.T) any {
			p, err := gpt.LoadTextGeneration(dirs["gpt"])
			require.NoError(t, err)
			cfg := p.Defaults()
			cfg.MaxNewTokens = 3
			out, err := p.Generate(ctx, []string{""}, cfg)
			require.NoError(t, err)
			require.Len(t, out[0].Tokens, 3)
			return out
		}},
		{"text generation sampled, new text only", "gpt", `{"inputs": ["the cat", "a dog"], "parameters": {"max_new_tokens": 5, "temperature": 1.5, "top_k": 4, "seed": 7, "return_full_text": false}}`, func(t *testing.T) any {
			p, err := gpt.LoadTextGeneration(dirs["gpt"])
			require.NoError(t, err)
			cfg := p.Defaults()
			cfg.MaxNewTokens, cfg.Temperature, cfg.TopK, cfg.Seed, cfg.NewTextOnly = 5, 1.5, 4, 7, true
			out, err := p.Generate(ctx, []string{"the cat", "a dog"}, cfg)
			require.NoError(t, err)
			return [][]models.Generated{{out[0]}, {out[1]}}
		}},
		{"translation", "mt", `{"inputs": ["one two three", "sechs sieben"]}`, func(t *testing.T) any {
			p, err := seq2seq.LoadTranslation(dirs["mt"])
			require.NoError(t, err)
			out, err := p.Translate(ctx, []string{"one two three", "sechs sieben"})
			require.NoError(t, err)
			return []translated{{out[0]}, {out[1]}}
		}},
		{"image classification, base64", "vit", `{"inputs": "` + base64.StdEncoding.EncodeToString(img) + `", "parameters": {"top_k": 2}}`, func(t *testing.T) any {
			p, err := vit.LoadImageClassification(dirs["vit"])
			require.NoError(t, err)
			p.TopK = 2
			m, _, err := image.Decode(bytes.NewReader(img))
			require.NoError(t, err)
			out, err := p.Predict(ctx, []image.Image{m})
			require.NoError(t, err)
			return out[0]
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body, _ := post(t, url+"/models/"+c.model, c.body)
			require.Equal(t, http.StatusOK, code, string(body))
			require.JSONEq(t, mustJSON(t, c.lib(t)), string(body))
		})
	}
	t.Run("image classification, raw bytes", func(t *testing.T) {
		resp, err := http.Post(url+"/models/vit", "image/png", bytes.NewReader(img))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		p, err := vit.LoadImageClassification(dirs["vit"])
		require.NoError(t, err)
		m, _, err := image.Decode(bytes.NewReader(img))
		require.NoError(t, err)
		out, err := p.Predict(ctx, []image.Image{m})
		require.NoError(t, err)
		require.Len(t, out[0], 3, "the default top 5 of 3 labels")
		require.JSONEq(t, mustJSON(t, out[0]), string(b))
	})
}

// sseEvents reads a server-sent event stream: the data of each event,
// up to [DONE] (included).
func sseEvents(t testing.TB, r io.Reader) []string {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
			if d == "[DONE]" {
				break
			}
		}
	}
	return out
}

// TestOpenAIRoutes: completions, chat (the checkpoint's chat template),
// embeddings (float and base64) and the models list answer the library's
// results in OpenAI's JSON; streams are server-sent events whose pieces
// join into the same text, with a finish_reason and [DONE].
func TestOpenAIRoutes(t *testing.T) {
	ctx := context.Background()
	dirs := testCheckpoints(t)
	dirs["base"] = "../models/gpt/testdata/pipeline" // no chat template
	_, url := startServer(t, dirs, Config{})
	delete(dirs, "base")
	p, err := gpt.LoadTextGeneration(dirs["gpt"])
	require.NoError(t, err)
	cfg := p.Defaults()
	cfg.MaxNewTokens, cfg.NewTextOnly = 7, true
	want, err := p.Generate(ctx, []string{"the cat", "a dog ran"}, cfg)
	require.NoError(t, err)

	code, body, _ := post(t, url+"/v1/completions", `{"model": "gpt", "prompt": ["the cat", "a dog ran"], "max_tokens": 7, "temperature": 0}`)
	require.Equal(t, http.StatusOK, code, string(body))
	var c completion
	require.NoError(t, json.Unmarshal(body, &c))
	require.Equal(t, "text_completion", c.Object)
	require.Len(t, c.Choices, 2)
	for i, ch := range c.Choices {
		require.Equal(t, want[i].Text, ch.Text)
		require.Equal(t, i, ch.Index)
		require.Equal(t, "length", *ch.FinishReason)
	}
	require.Equal(t, 14, c.Usage.CompletionTokens)

	stream := func(t *testing.T, path, body string) []string {
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		ev := sseEvents(t, resp.Body)
		require.Equal(t, "[DONE]", ev[len(ev)-1])
		return ev[:len(ev)-1]
	}
	t.Run("completions stream", func(t *testing.T) {
		ev := stream(t, "/v1/completions", `{"model": "gpt", "prompt": "the cat", "max_tokens": 7, "temperature": 0, "stream": true, "stream_options": {"include_usage": true}}`)
		var text strings.Builder
		var reasons []string
		for _, e := range ev[:len(ev)-1] {
			var c completion
			require.NoError(t, json.Unmarshal([]byte(e), &c))
			require.Len(t, c.Choices, 1)
			text.WriteString(c.Choices[0].Text)
			if r := c.Choices[0].FinishReason; r != nil {
				reasons = append(reasons, *r)
			}
		}
		require.Greater(t, len(ev), 3, "pieces as they are decoded")
		require.Equal(t, want[0].Text, text.String())
		require.Equal(t, []string{"length"}, reasons)
		var last completion
		require.NoError(t, json.Unmarshal([]byte(ev[len(ev)-1]), &last))
		require.Equal(t, 7, last.Usage.CompletionTokens)
	})

	tmpl, err := models.LoadChatTemplate(dirs["gpt"])
	require.NoError(t, err)
	msgs := []models.ChatMessage{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello"}}
	prompt, err := tmpl.Apply(ctx, msgs, models.ChatOptions{AddGenerationPrompt: true})
	require.NoError(t, err)
	require.Equal(t, "system: be brief\nuser: hello\nassistant:", prompt)
	wantChat, err := p.Generate(ctx, []string{prompt}, cfg)
	require.NoError(t, err)
	chatBody := `{"model": "gpt", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": [{"type": "text", "text": "hello"}]}], "max_tokens": 7, "temperature": 0`
	t.Run("chat", func(t *testing.T) {
		code, body, _ := post(t, url+"/v1/chat/completions", chatBody+"}")
		require.Equal(t, http.StatusOK, code, string(body))
		var c chatCompletion
		require.NoError(t, json.Unmarshal(body, &c))
		require.Equal(t, "chat.completion", c.Object)
		require.Equal(t, "assistant", c.Choices[0].Message.Role)
		require.Equal(t, wantChat[0].Text, c.Choices[0].Message.Content)
		ids, err := p.Tokenizer.Encode(prompt)
		require.NoError(t, err)
		require.Equal(t, len(ids), c.Usage.PromptTokens)
	})
	t.Run("chat stream", func(t *testing.T) {
		ev := stream(t, "/v1/chat/completions", chatBody+`, "stream": true}`)
		var text strings.Builder
		for i, e := range ev {
			var c chatCompletion
			require.NoError(t, json.Unmarshal([]byte(e), &c))
			require.Equal(t, "chat.completion.chunk", c.Object)
			if i == 0 {
				require.Equal(t, "assistant", c.Choices[0].Delta.Role)
			}
			text.WriteString(c.Choices[0].Delta.Content)
			if i == len(ev)-1 {
				require.Equal(t, "length", *c.Choices[0].FinishReason)
			}
		}
		require.Equal(t, wantChat[0].Text, text.String())
	})
	t.Run("chat without a template", func(t *testing.T) {
		for _, stream := range []string{"false", "true"} {
			code, body, _ := post(t, url+"/v1/chat/completions", `{"model": "base", "messages": [{"role": "user", "content": "hi"}], "stream": `+stream+`}`)
			require.Equal(t, http.StatusUnprocessableEntity, code, string(body))
			require.Contains(t, string(body), "chat_template")
		}
	})

	f, err := bert.LoadFeatureExtraction(dirs["feat"])
	require.NoError(t, err)
	feats, err := f.Predict(ctx, []string{"the cat", "a dog ran"})
	require.NoError(t, err)
	for _, format := range []string{"float", "base64"} {
		t.Run("embeddings "+format, func(t *testing.T) {
			code, body, _ := post(t, url+"/v1/embeddings", `{"model": "feat", "input": ["the cat", "a dog ran"], "encoding_format": "`+format+`"}`)
			require.Equal(t, http.StatusOK, code, string(body))
			var e struct {
				Object string `json:"object"`
				Data   []struct {
					Index     int             `json:"index"`
					Embedding json.RawMessage `json:"embedding"`
				} `json:"data"`
				Usage usage `json:"usage"`
			}
			require.NoError(t, json.Unmarshal(body, &e))
			require.Equal(t, "list", e.Object)
			require.Len(t, e.Data, 2)
			for i, d := range e.Data {
				var v []float32
				if format == "float" {
					require.NoError(t, json.Unmarshal(d.Embedding, &v))
				} else {
					var s string
					require.NoError(t, json.Unmarshal(d.Embedding, &s))
					b, err := base64.StdEncoding.DecodeString(s)
					require.NoError(t, err)
					for j := 0; j < len(b); j += 4 {
						v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(b[j:])))
					}
				}
				require.Len(t, v, len(feats[i].Mean))
				for j, x := range feats[i].Mean {
					require.Equal(t, float32(x), v[j])
				}
			}
			require.Equal(t, 4+5, e.Usage.PromptTokens, "the texts' tokens, [CLS] and [SEP] included")
		})
	}

	resp, err := http.Get(url + "/v1/models")
	require.NoError(t, err)
	var list struct {
		Data []modelObject `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	resp.Body.Close()
	var names []string
	for _, m := range list.Data {
		names = append(names, m.ID+":"+m.Task)
		require.Equal(t, "model", m.Object)
	}
	require.Equal(t, []string{"base:text-generation", "cls:text-classification", "feat:feature-extraction", "gcls:text-classification", "gpt:text-generation",
		"mlm:fill-mask", "mt:translation", "ner:token-classification", "qa:question-answering", "vit:image-classification"}, names)
	resp, err = http.Get(url + "/v1/models/qa")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(b), `"task":"question-answering"`)
}

// TestOperatingRoutes: /health, /ready (503 once draining), /metrics
// with the server's series.
func TestOperatingRoutes(t *testing.T) {
	dirs := testCheckpoints(t)
	s, url := startServer(t, map[string]string{"cls": dirs["cls"], "gpt": dirs["gpt"]}, Config{})
	code, _, _ := post(t, url+"/models/cls", `{"inputs": "the cat"}`)
	require.Equal(t, http.StatusOK, code)
	code, _, _ = post(t, url+"/v1/completions", `{"model": "gpt", "prompt": "the cat", "max_tokens": 3}`)
	require.Equal(t, http.StatusOK, code)
	get := func(path string) (int, string) {
		resp, err := http.Get(url + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/health")
	require.Equal(t, http.StatusOK, code, body)
	code, body = get("/metrics")
	require.Equal(t, http.StatusOK, code, body)
	for _, want := range []string{
		`zoo_serve_requests_total{code="200",model="cls",route="POST /models/{name...}"} 1`,
		`zoo_serve_request_duration_seconds_count{model="gpt",route="POST /v1/completions"} 1`,
		`zoo_serve_batch_size_count{model="cls"} 1`,
		`zoo_serve_generated_tokens_total{model="gpt"} 3`,
		`zoo_serve_queue_depth{model="cls"} 0`,
		`zoo_serve_generation_seconds_total{model="gpt"}`,
		`zoo_serve_requests_in_flight 1`,
	} {
		require.Contains(t, body, want)
	}
	code, _ = get("/ready")
	require.Equal(t, http.StatusOK, code)
	s.Drain()
	code, body = get("/ready")
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	code, _ = get("/health")
	require.Equal(t, http.StatusOK, code, "draining is not dead")
	code, _, _ = post(t, url+"/models/cls", `{"inputs": "the cat"}`)
	require.Equal(t, http.StatusOK, code, "a draining server still serves")
	s.Close()
	code, body2, h := post(t, url+"/models/cls", `{"inputs": "the cat"}`)
	require.Equal(t, http.StatusServiceUnavailable, code, string(body2))
	require.Equal(t, "1", h.Get("Retry-After"))
}

// TestTaskForCheckpoint: the default task of each head, as zoo predict
// picks it.
func TestTaskForCheckpoint(t *testing.T) {
	dirs := testCheckpoints(t)
	want := map[string]string{"cls": "text-classification", "ner": "token-classification", "qa": "question-answering", "mlm": "fill-mask",
		"feat": "feature-extraction", "gpt": "text-generation", "gcls": "text-classification", "vit": "image-classification", "mt": "translation"}
	for name, dir := range dirs {
		ck, err := models.Open(dir)
		require.NoError(t, err)
		task, err := TaskForCheckpoint(ck)
		require.NoError(t, err)
		require.Equal(t, want[name], task, name)
	}
	_, err := New(context.Background(), Config{Checkpoints: []Checkpoint{{Dir: dirs["cls"]}, {Dir: dirs["cls"]}}, Logger: quiet})
	require.ErrorContains(t, err, `two checkpoints are named "BertForSequenceClassification"`)
	_, err = New(context.Background(), Config{Checkpoints: []Checkpoint{{Name: "x", Dir: dirs["gpt"], Task: "fill-mask"}}, Logger: quiet})
	require.ErrorContains(t, err, "fill-mask needs a bert checkpoint, not gpt")
	_, err = New(context.Background(), Config{Logger: quiet})
	require.ErrorContains(t, err, "no checkpoints")
	_ = fmt.Sprint()
}

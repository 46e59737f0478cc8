package serve

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// OpenAI's request fields that the server reads but only at their
// defaults: a request that sets them otherwise is refused, naming them,
// rather than answered as if it had not.
type openAIUnsupported struct {
	N                *int            `json:"n"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	Logprobs         json.RawMessage `json:"logprobs"`
	TopLogprobs      *int            `json:"top_logprobs"`
	LogitBias        map[string]any  `json:"logit_bias"`
	User             string          `json:"user"` // ignored
}

func (u openAIUnsupported) check() error {
	switch {
	case u.N != nil && *u.N != 1:
		return unprocessable("n", "n is %d: the server returns one choice per prompt (n 1)", *u.N)
	case u.PresencePenalty != nil && *u.PresencePenalty != 0:
		return unprocessable("presence_penalty", "presence_penalty is not supported: leave it 0")
	case u.FrequencyPenalty != nil && *u.FrequencyPenalty != 0:
		return unprocessable("frequency_penalty", "frequency_penalty is not supported: leave it 0")
	case len(u.Logprobs) > 0 && string(u.Logprobs) != "null" && string(u.Logprobs) != "false":
		return unprocessable("logprobs", "logprobs are not supported: leave logprobs null")
	case u.TopLogprobs != nil && *u.TopLogprobs != 0:
		return unprocessable("top_logprobs", "top_logprobs are not supported")
	case len(u.LogitBias) > 0:
		return unprocessable("logit_bias", "logit_bias is not supported")
	}
	return nil
}

// sampling is what completions and chat share.
type sampling struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	Seed          *int64          `json:"seed"`
	Stop          json.RawMessage `json:"stop"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	openAIUnsupported
}

// genRequest reads s's settings; maxTokens names the field of the
// length (max_tokens, max_completion_tokens).
func (s sampling) genRequest(maxTokens string, max *int) (genRequest, error) {
	g := genRequest{maxNew: max, maxParam: maxTokens, newTextOnly: true}
	if err := s.openAIUnsupported.check(); err != nil {
		return g, err
	}
	if s.Temperature != nil {
		if t := *s.Temperature; t < 0 || t > 2 || math.IsNaN(t) {
			return g, unprocessable("temperature", "temperature is %v; it must be from 0 to 2", t)
		}
		g.temperature = s.Temperature
	}
	if s.TopP != nil {
		if p := *s.TopP; !(p > 0 && p <= 1) {
			return g, unprocessable("top_p", "top_p is %v; it must be in (0, 1]", p)
		}
		g.topP = s.TopP
	}
	if s.Seed != nil {
		seed := uint64(*s.Seed)
		g.seed = &seed
	}
	var err error
	if g.stop, err = stopsOf(s.Stop, "stop"); err != nil {
		return g, err
	}
	if s.StreamOptions != nil && !s.Stream {
		return g, unprocessable("stream_options", "stream_options is for stream: true")
	}
	return g, nil
}

type completionRequest struct {
	sampling
	Prompt json.RawMessage `json:"prompt"`
	Echo   bool            `json:"echo"`
	Suffix *string         `json:"suffix"`
	BestOf *int            `json:"best_of"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type completionChoice struct {
	Text         string  `json:"text"`
	Index        int     `json:"index"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

type completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
}

// finish is OpenAI's finish_reason: "length" when the text used all of
// its tokens, else "stop" (an EOS token or a stop string ended it).
func finish(g models.Generated, limit int) *string {
	r := "stop"
	if len(g.Tokens) >= limit {
		r = "length"
	}
	return &r
}

var idSeq struct {
	sync.Mutex
	n uint64
}

func newID(prefix string) string {
	idSeq.Lock()
	defer idSeq.Unlock()
	idSeq.n++
	return fmt.Sprintf("%s-%x%06x", prefix, time.Now().UnixNano(), idSeq.n)
}

// completions is POST /v1/completions.
func (s *Server) completions(w http.ResponseWriter, r *http.Request) error {
	var req completionRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	m, err := s.model(r, req.Model, "model", "text-generation")
	if err != nil {
		return err
	}
	switch {
	case req.Suffix != nil && *req.Suffix != "":
		return unprocessable("suffix", "suffix (insertion) is not supported")
	case req.BestOf != nil && *req.BestOf != 1:
		return unprocessable("best_of", "best_of is not supported: leave it 1")
	}
	g, err := req.genRequest("max_tokens", req.MaxTokens)
	if err != nil {
		return err
	}
	g.newTextOnly = !req.Echo
	prompts, _, err := textsOf(req.Prompt, "prompt", s.cfg.MaxInputs, true) // "": from the start token
	if err != nil {
		return err
	}
	cfg, err := m.genConfig(g)
	if err != nil {
		return err
	}
	counts, err := m.checkPrompts(prompts, "prompt")
	if err != nil {
		return err
	}
	c := completion{ID: newID("cmpl"), Object: "text_completion", Created: time.Now().Unix(), Model: m.name}
	promptTokens := 0
	for _, n := range counts {
		promptTokens += n
	}
	if !req.Stream {
		out, err := m.generate(r.Context(), prompts, cfg)
		if err != nil {
			return err
		}
		u := usage{PromptTokens: promptTokens}
		for i, x := range out {
			c.Choices = append(c.Choices, completionChoice{Text: x.Text, Index: i, FinishReason: finish(x, maxNew(cfg, counts[i]))})
			u.CompletionTokens += len(x.Tokens)
		}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		c.Usage = &u
		writeJSON(w, http.StatusOK, c)
		return nil
	}
	sse := newSSE(w)
	if req.Echo {
		for i, p := range prompts {
			sse.send(completion{ID: c.ID, Object: c.Object, Created: c.Created, Model: c.Model, Choices: []completionChoice{{Text: p, Index: i}}})
		}
	}
	cfg.NewTextOnly = true
	cfg.OnText = func(i int, piece string) {
		sse.send(completion{ID: c.ID, Object: c.Object, Created: c.Created, Model: c.Model, Choices: []completionChoice{{Text: piece, Index: i}}})
	}
	out, err := m.generate(r.Context(), prompts, cfg)
	if err != nil {
		sse.fail(err)
		return err
	}
	u := usage{PromptTokens: promptTokens}
	for i, x := range out {
		sse.send(completion{ID: c.ID, Object: c.Object, Created: c.Created, Model: c.Model, Choices: []completionChoice{{Index: i, FinishReason: finish(x, maxNew(cfg, counts[i]))}}})
		u.CompletionTokens += len(x.Tokens)
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		sse.send(completion{ID: c.ID, Object: c.Object, Created: c.Created, Model: c.Model, Choices: []completionChoice{}, Usage: &u})
	}
	sse.done()
	return nil
}

// sse writes server-sent events: "data: {json}\n\n" chunks, flushed
// each, and "data: [DONE]" at the end. A write that fails (the client
// went away) is dropped: the request's context, cancelled by net/http,
// stops the generation.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

func (s *sse) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", b); err == nil {
		_ = s.rc.Flush()
	}
}

// fail ends a stream with an error event, the way OpenAI's streams do.
func (s *sse) fail(err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = &apiError{Type: typeServer, Message: err.Error()}
	}
	s.send(map[string]*apiError{"error": e})
}

func (s *sse) done() {
	if _, err := fmt.Fprint(s.w, "data: [DONE]\n\n"); err == nil {
		_ = s.rc.Flush()
	}
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
}

type chatRequest struct {
	sampling
	Messages            []chatMessage `json:"messages"`
	MaxCompletionTokens *int          `json:"max_completion_tokens"`
}

type chatDelta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
}

type chatChoice struct {
	Index        int        `json:"index"`
	Message      *chatOut   `json:"message,omitempty"`
	Delta        *chatDelta `json:"delta,omitempty"`
	Logprobs     any        `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
}

type chatOut struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage,omitempty"`
}

// messages reads the conversation: each a role and a content, a string
// or an array of {"type": "text", "text"} parts (joined).
func (req chatRequest) messages() ([]models.ChatMessage, error) {
	if len(req.Messages) == 0 {
		return nil, unprocessable("messages", "messages is empty: give at least one {\"role\", \"content\"}")
	}
	if len(req.Messages) > models.MaxChatMessages {
		return nil, tooLarge("messages", "%d messages; at most %d", len(req.Messages), models.MaxChatMessages)
	}
	out := make([]models.ChatMessage, len(req.Messages))
	for i, m := range req.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		if m.Role == "" {
			return nil, unprocessable(param+".role", "%s has no role: system, user or assistant", param)
		}
		var text string
		if err := json.Unmarshal(m.Content, &text); err != nil {
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(m.Content, &parts); err != nil {
				return nil, badRequest(param+".content", "%s.content must be a string or an array of text parts", param)
			}
			var b strings.Builder
			for j, p := range parts {
				if p.Type != "text" {
					return nil, unprocessable(fmt.Sprintf("%s.content[%d].type", param, j), "content part type %q is not supported: only text", p.Type)
				}
				b.WriteString(p.Text)
			}
			text = b.String()
		}
		out[i] = models.ChatMessage{Role: m.Role, Content: text}
	}
	return out, nil
}

// chatCompletions is POST /v1/chat/completions: the conversation
// rendered by the checkpoint's chat template (models.LoadChatTemplate)
// and continued.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) error {
	var req chatRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	m, err := s.model(r, req.Model, "model", "text-generation")
	if err != nil {
		return err
	}
	maxParam, max := "max_tokens", req.MaxTokens
	if req.MaxCompletionTokens != nil {
		maxParam, max = "max_completion_tokens", req.MaxCompletionTokens
	}
	g, err := req.genRequest(maxParam, max)
	if err != nil {
		return err
	}
	msgs, err := req.messages()
	if err != nil {
		return err
	}
	cfg, err := m.genConfig(g)
	if err != nil {
		return err
	}
	c := chatCompletion{ID: newID("chatcmpl"), Object: "chat.completion", Created: time.Now().Unix(), Model: m.name}
	var stream *sse
	if req.Stream {
		// Render first, so that a template error is a plain 4xx answer.
		if _, _, err := m.chatPrompt(r.Context(), msgs); err != nil {
			return err
		}
		stream = newSSE(w)
		c.Object = "chat.completion.chunk"
		stream.send(chatCompletion{ID: c.ID, Object: c.Object, Created: c.Created, Model: c.Model,
			Choices: []chatChoice{{Delta: &chatDelta{Role: "assistant"}}}})
		cfg.OnText = func(_ int, piece string) {
			stream.send(chatCompletion{ID: c.ID, Object: c.Object, Created: c.Created, Model: c.Model,
				Choices: []chatChoice{{Delta: &chatDelta{Content: piece}}}})
		}
	}
	out, ids, err := m.chat(r.Context(), msgs, cfg)
	if err != nil {
		if stream != nil {
			stream.fail(err)
		}
		return err
	}
	u := usage{PromptTokens: len(ids), CompletionTokens: len(out.Tokens)}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	fr := finish(out, maxNew(cfg, len(ids)))
	if stream != nil {
		stream.send(chatCompletion{ID: c.ID, Object: c.Object, Created: c.Created, Model: c.Model,
			Choices: []chatChoice{{Delta: &chatDelta{}, FinishReason: fr}}})
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			stream.send(chatCompletion{ID: c.ID, Object: c.Object, Created: c.Created, Model: c.Model, Choices: []chatChoice{}, Usage: &u})
		}
		stream.done()
		return nil
	}
	c.Choices = []chatChoice{{Message: &chatOut{Role: "assistant", Content: out.Text}, FinishReason: fr}}
	c.Usage = &u
	writeJSON(w, http.StatusOK, c)
	return nil
}

// chatPrompt renders msgs as chat does, without generating: the text
// and its ids, or the template's error.
func (m *model) chatPrompt(ctx context.Context, msgs []models.ChatMessage) (string, []int, error) {
	return m.gen.render(ctx, msgs)
}

type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
}

type embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string of little-endian float32s
}

// embeddings is POST /v1/embeddings: a feature-extraction model's
// sentence embeddings (a sentence-transformers folder's pooling, else the
// mean of the last hidden state, as zoo predict's sentence_embedding).
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) error {
	var req embeddingRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	m, err := s.model(r, req.Model, "model", "feature-extraction")
	if err != nil {
		return err
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		return unprocessable("encoding_format", "encoding_format %q: use float or base64", req.EncodingFormat)
	}
	texts, _, err := textsOf(req.Input, "input", s.cfg.MaxInputs)
	if err != nil {
		return err
	}
	if err := m.checkLength(texts, false, "input"); err != nil {
		return err
	}
	out, err := m.batch.submit(r.Context(), 0, texts)
	if err != nil {
		return err
	}
	resp := struct {
		Object string      `json:"object"`
		Data   []embedding `json:"data"`
		Model  string      `json:"model"`
		Usage  usage       `json:"usage"`
	}{Object: "list", Model: m.name}
	for i, x := range out {
		var v []float32
		switch f := x.(type) {
		case []float32:
			v = f
		case bert.Features:
			v = make([]float32, len(f.Mean))
			for j, x := range f.Mean {
				v[j] = float32(x)
			}
		}
		if req.Dimensions != nil && *req.Dimensions != len(v) {
			return unprocessable("dimensions", "dimensions %d: model %s's embeddings have %d (leave it out)", *req.Dimensions, m.name, len(v))
		}
		e := embedding{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			e.Embedding = base64.StdEncoding.EncodeToString(b)
		}
		resp.Data = append(resp.Data, e)
		n, _ := m.countTokens(texts[i])
		resp.Usage.PromptTokens += n
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	writeJSON(w, http.StatusOK, resp)
	return nil
}

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	Task    string `json:"task"` // zoo's: the Hugging Face pipeline task
}

func (m *model) object() modelObject {
	return modelObject{ID: m.name, Object: "model", Created: m.created, OwnedBy: "zoo", Task: m.task}
}

// listModels is GET /v1/models.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) error {
	data := make([]modelObject, 0, len(s.names))
	for _, n := range s.names {
		data = append(data, s.models[n].object())
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
	return nil
}

// getModel is GET /v1/models/{name}.
func (s *Server) getModel(w http.ResponseWriter, r *http.Request) error {
	m, err := s.model(r, r.PathValue("name"), "model")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m.object())
	return nil
}

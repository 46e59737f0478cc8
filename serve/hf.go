package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // image decoders for image classification
	_ "image/jpeg" //
	_ "image/png"  //
	"io"
	"math"
	"net/http"
	"strings"

	_ "golang.org/x/image/bmp"  //
	_ "golang.org/x/image/webp" //

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// hfRequest is Hugging Face's inference API request.
type hfRequest struct {
	Inputs     json.RawMessage `json:"inputs"`
	Parameters params          `json:"parameters"`
	// Options are the hosted API's (wait_for_model, use_cache): read and
	// ignored, every model being loaded.
	Options map[string]json.RawMessage `json:"options"`
}

// huggingFace is POST /models/{name}: the model's task on the inputs,
// answered as Hugging Face's inference API answers.
func (s *Server) huggingFace(w http.ResponseWriter, r *http.Request) error {
	m, err := s.model(r, r.PathValue("name"), "model")
	if err != nil {
		return err
	}
	var req hfRequest
	if m.task == "image-classification" && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		b, err := io.ReadAll(r.Body) // bounded by MaxBytesReader
		if err != nil {
			return jsonError(err)
		}
		return s.classifyImage(w, r, m, b, nil)
	}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	p := req.Parameters
	var v any
	switch m.task {
	case "text-classification":
		v, err = s.hfTextClassification(r.Context(), m, req.Inputs, p)
	case "token-classification":
		v, err = s.hfTokenClassification(r.Context(), m, req.Inputs, p)
	case "question-answering":
		v, err = s.hfQuestionAnswering(r.Context(), m, req.Inputs, p)
	case "fill-mask":
		v, err = s.hfFillMask(r.Context(), m, req.Inputs, p)
	case "feature-extraction":
		v, err = s.hfFeatures(r.Context(), m, req.Inputs, p)
	case "translation":
		v, err = s.hfTranslation(r.Context(), m, req.Inputs, p)
	case "text-generation":
		v, err = s.hfTextGeneration(r.Context(), m, req.Inputs, p)
	case "image-classification":
		if len(req.Inputs) == 0 || string(req.Inputs) == "null" {
			return unprocessable("inputs", "no inputs: send the image's bytes as the body, or JSON {\"inputs\": BASE64}")
		}
		var b64 string
		if err := json.Unmarshal(req.Inputs, &b64); err != nil {
			return badRequest("inputs", "inputs must be the image as a base64 string (or send the raw bytes with an image Content-Type)")
		}
		if i := strings.Index(b64, ";base64,"); strings.HasPrefix(b64, "data:") && i > 0 {
			b64 = b64[i+len(";base64,"):]
		}
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return unprocessable("inputs", "inputs is not base64: %v", err)
		}
		return s.classifyImage(w, r, m, b, p)
	default:
		err = fmt.Errorf("task %s has no Hugging Face route", m.task)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) hfTextClassification(ctx context.Context, m *model, inputs json.RawMessage, p params) (any, error) {
	if err := p.check(m.task, "top_k", "truncation"); err != nil {
		return nil, err
	}
	k, err := p.int("top_k", 1, math.MaxInt32, 1) // zoo predict's and the pipeline's default, 1
	if err != nil {
		return nil, err
	}
	if _, ok := p["top_k"]; ok && !p.has("top_k") {
		k = 0 // null: every label
	}
	out, _, err := s.submitInputs(ctx, m, inputs, p)
	if err != nil {
		return nil, err
	}
	labels := make([][]models.Label, len(out))
	for i, x := range out {
		labels[i] = x.([]models.Label)
		if k > 0 && k < len(labels[i]) {
			labels[i] = labels[i][:k]
		}
	}
	return labels, nil // a list per input, as the hosted API answers even one text
}

func (s *Server) hfTokenClassification(ctx context.Context, m *model, inputs json.RawMessage, p params) (any, error) {
	if err := p.check(m.task, "aggregation_strategy", "truncation"); err != nil {
		return nil, err
	}
	if p.has("aggregation_strategy") {
		var a string
		if json.Unmarshal(p["aggregation_strategy"], &a) != nil || a != "simple" {
			return nil, unprocessable("parameters.aggregation_strategy", `parameters.aggregation_strategy must be "simple", the one zoo groups entities by`)
		}
	}
	out, single, err := s.submitInputs(ctx, m, inputs, p)
	if err != nil {
		return nil, err
	}
	es := make([][]models.Entity, len(out))
	for i, x := range out {
		if es[i] = x.([]models.Entity); es[i] == nil {
			es[i] = []models.Entity{}
		}
	}
	if single {
		return es[0], nil
	}
	return es, nil
}

func (s *Server) hfQuestionAnswering(ctx context.Context, m *model, inputs json.RawMessage, p params) (any, error) {
	if err := p.check(m.task, "top_k"); err != nil {
		return nil, err
	}
	k, err := p.int("top_k", 1, 100, 1)
	if err != nil {
		return nil, err
	}
	var one bert.QAInput
	var in []bert.QAInput
	single := false
	type qa struct {
		Question *string `json:"question"`
		Context  *string `json:"context"`
	}
	check := func(x qa, where string) (bert.QAInput, error) {
		if x.Question == nil || x.Context == nil || strings.TrimSpace(*x.Question) == "" || strings.TrimSpace(*x.Context) == "" {
			return one, unprocessable(where, `%s needs a question and a context, both non-empty: {"question": "...", "context": "..."}`, where)
		}
		return bert.QAInput{Question: *x.Question, Context: *x.Context}, nil
	}
	dec := func(raw json.RawMessage, v any) error {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		return d.Decode(v)
	}
	var x qa
	var xs []qa
	switch {
	case len(inputs) == 0 || string(inputs) == "null":
		return nil, unprocessable("inputs", `no inputs: give {"question": "...", "context": "..."}`)
	case dec(inputs, &x) == nil:
		q, err := check(x, "inputs")
		if err != nil {
			return nil, err
		}
		in, single = []bert.QAInput{q}, true
	case dec(inputs, &xs) == nil:
		if len(xs) == 0 || len(xs) > s.cfg.MaxInputs {
			return nil, unprocessable("inputs", "inputs holds %d questions; give 1 to %d", len(xs), s.cfg.MaxInputs)
		}
		for i, x := range xs {
			q, err := check(x, fmt.Sprintf("inputs[%d]", i))
			if err != nil {
				return nil, err
			}
			in = append(in, q)
		}
	default:
		return nil, badRequest("inputs", `inputs must be {"question": "...", "context": "..."} or an array of them`)
	}
	release, err := m.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	q := *m.qa // a copy with this request's top-k: its graphs are shared, by pointer
	q.TopK = k
	out, err := q.PredictAll(ctx, in)
	if err != nil {
		return nil, err
	}
	res := make([]any, len(out))
	for i, as := range out {
		if as == nil {
			as = []models.Answer{}
		}
		res[i] = as
		if k == 1 { // zoo predict's: the answer, or the zero Answer when no span qualifies
			a := models.Answer{}
			if len(as) > 0 {
				a = as[0]
			}
			res[i] = a
		}
	}
	if single {
		return res[0], nil
	}
	return res, nil
}

func (s *Server) hfFillMask(ctx context.Context, m *model, inputs json.RawMessage, p params) (any, error) {
	if err := p.check(m.task, "top_k"); err != nil {
		return nil, err
	}
	k, err := p.int("top_k", 1, maxFillTopK, bert.DefaultTopK)
	if err != nil {
		return nil, err
	}
	texts, single, err := textsOf(inputs, "inputs", s.cfg.MaxInputs)
	if err != nil {
		return nil, err
	}
	if err := m.checkLength(texts, false, "inputs"); err != nil {
		return nil, err
	}
	out, err := m.batch.submit(ctx, 0, texts)
	if err != nil {
		var te *bert.TextError
		if errors.As(err, &te) {
			return nil, unprocessable("inputs", "%v", te.Err)
		}
		return nil, err
	}
	res := make([]any, len(out))
	for i, x := range out {
		fills := x.([][]bert.Fill)
		for j, f := range fills {
			fills[j] = f[:min(k, len(f))]
		}
		res[i] = fills
		if len(fills) == 1 { // one mask: its fills; several: a list per mask
			res[i] = fills[0]
		}
	}
	if single {
		return res[0], nil
	}
	return res, nil
}

func (s *Server) hfFeatures(ctx context.Context, m *model, inputs json.RawMessage, p params) (any, error) {
	if err := p.check(m.task, "truncation"); err != nil {
		return nil, err
	}
	out, single, err := s.submitInputs(ctx, m, inputs, p)
	if err != nil {
		return nil, err
	}
	res := make([]any, len(out))
	for i, x := range out {
		switch f := x.(type) {
		case []float32: // a sentence-transformers model: its embedding
			res[i] = f
		case bert.Features: // the pipeline's last_hidden_state, (1, T, H)
			res[i] = [][][]float64{f.Hidden}
		}
	}
	if single {
		return res[0], nil
	}
	return res, nil
}

// translated is the translation pipeline's output for one text.
type translated struct {
	Text string `json:"translation_text"`
}

func (s *Server) hfTranslation(ctx context.Context, m *model, inputs json.RawMessage, p params) (any, error) {
	if err := p.check(m.task); err != nil {
		return nil, err
	}
	texts, _, err := textsOf(inputs, "inputs", s.cfg.MaxInputs)
	if err != nil {
		return nil, err
	}
	release, err := m.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	out, err := m.translate.Translate(ctx, texts)
	if err != nil {
		return nil, err
	}
	res := make([]translated, len(out))
	for i, t := range out {
		res[i] = translated{t}
	}
	return res, nil
}

func (s *Server) hfTextGeneration(ctx context.Context, m *model, inputs json.RawMessage, p params) (any, error) {
	if err := p.check(m.task, "max_new_tokens", "temperature", "top_k", "top_p", "seed", "do_sample", "num_beams",
		"repetition_penalty", "return_full_text", "stop"); err != nil {
		return nil, err
	}
	var g genRequest
	g.maxParam = "parameters.max_new_tokens"
	if p.has("max_new_tokens") {
		n, err := p.int("max_new_tokens", 1, s.cfg.MaxNewTokens, 0)
		if err != nil {
			return nil, err
		}
		g.maxNew = &n
	}
	floats := []struct {
		name   string
		lo, hi float64
		dst    **float64
	}{{"temperature", 0, 100, &g.temperature}, {"top_p", 1e-9, 1, &g.topP}, {"repetition_penalty", 0, 100, &g.repetition}}
	for _, f := range floats {
		if p.has(f.name) {
			v, err := p.float(f.name, f.lo, f.hi, 0)
			if err != nil {
				return nil, err
			}
			*f.dst = &v
		}
	}
	if p.has("top_k") {
		k, err := p.int("top_k", 0, 1<<20, 0)
		if err != nil {
			return nil, err
		}
		g.topK = &k
	}
	if p.has("num_beams") {
		k, err := p.int("num_beams", 1, 16, 1)
		if err != nil {
			return nil, err
		}
		g.beams = &k
	}
	if p.has("seed") {
		k, err := p.int("seed", 0, math.MaxInt32, 0)
		if err != nil {
			return nil, err
		}
		seed := uint64(k)
		g.seed = &seed
	}
	if p.has("do_sample") {
		b, err := p.bool("do_sample", false)
		if err != nil {
			return nil, err
		}
		g.doSample = &b
	}
	full, err := p.bool("return_full_text", true)
	if err != nil {
		return nil, err
	}
	g.newTextOnly = !full
	if g.stop, err = stopsOf(p["stop"], "parameters.stop"); err != nil {
		return nil, err
	}
	// An empty prompt starts from the model's start token, as zoo predict.
	prompts, single, err := textsOf(inputs, "inputs", s.cfg.MaxInputs, true)
	if err != nil {
		return nil, err
	}
	cfg, err := m.genConfig(g)
	if err != nil {
		return nil, err
	}
	if _, err := m.checkPrompts(prompts, "inputs"); err != nil {
		return nil, err
	}
	out, err := m.generate(ctx, prompts, cfg)
	if err != nil {
		return nil, err
	}
	res := make([][]models.Generated, len(out))
	for i, x := range out {
		res[i] = []models.Generated{x}
	}
	if single {
		return res[0], nil
	}
	return res, nil
}

// classifyImage answers image classification of one encoded image b:
// its size is read from its header and bounded before it is decoded (a
// decompression bomb is 413 without a pixel decoded).
func (s *Server) classifyImage(w http.ResponseWriter, r *http.Request, m *model, b []byte, p params) error {
	if err := p.check(m.task, "top_k"); err != nil {
		return err
	}
	k, err := p.int("top_k", 1, 1<<16, m.image.TopK)
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return unprocessable("inputs", "no image: send its bytes as the body")
	}
	c, format, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return unprocessable("inputs", "the image does not decode (%v): send a PNG, JPEG, GIF, BMP or WebP", err)
	}
	if px := int64(c.Width) * int64(c.Height); c.Width <= 0 || c.Height <= 0 || px > int64(s.cfg.MaxImagePixels) {
		return tooLarge("inputs", "the %s image is %d×%d pixels; at most %d pixels (--max-image-pixels)", format, c.Width, c.Height, s.cfg.MaxImagePixels)
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return unprocessable("inputs", "the %s image does not decode: %v", format, err)
	}
	release, err := m.acquire(r.Context())
	if err != nil {
		return err
	}
	defer release()
	probs, err := m.image.Probabilities(r.Context(), []image.Image{img})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, models.TopLabels(probs[0], m.image.Model.Labels, k))
	return nil
}

// submitInputs is the encoder tasks' common path: the texts of "inputs"
// (a string or a list; single when a string), parameters.truncation,
// the length check, and one submission to the model's batcher; out holds
// one result per text.
func (s *Server) submitInputs(ctx context.Context, m *model, inputs json.RawMessage, p params) (out []any, single bool, err error) {
	texts, single, err := textsOf(inputs, "inputs", s.cfg.MaxInputs)
	if err != nil {
		return nil, false, err
	}
	truncate, err := p.bool("truncation", false)
	if err != nil {
		return nil, false, err
	}
	if err := m.checkLength(texts, truncate, "inputs"); err != nil {
		return nil, false, err
	}
	out, err = m.batch.submit(ctx, 0, texts)
	return out, single, err
}

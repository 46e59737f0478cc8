package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/models/llama"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/models/vit"
)

// Tasks are the Hugging Face pipeline tasks the server serves.
var Tasks = []string{"text-classification", "token-classification", "question-answering", "fill-mask",
	"feature-extraction", "image-classification", "translation", "text-generation"}

// taskAliases are Hugging Face's other names of the tasks.
var taskAliases = map[string]string{"sentiment-analysis": "text-classification", "ner": "token-classification"}

// canonicalTask is task with its alias resolved, or an error naming the
// tasks.
func canonicalTask(task string) (string, error) {
	if a, ok := taskAliases[task]; ok {
		task = a
	}
	if strings.HasPrefix(task, "translation_") { // Hugging Face's translation_en_to_de
		task = "translation"
	}
	if !slices.Contains(Tasks, task) {
		return "", fmt.Errorf("task %q is not one the server serves: %s", task, strings.Join(Tasks, ", "))
	}
	return task, nil
}

// archTasks maps an architectures class's suffix to its default task,
// the way every family names its heads (BertForMaskedLM,
// GPT2LMHeadModel, MarianMTModel, …).
var archTasks = []struct{ suffix, task string }{
	{"ForSequenceClassification", "text-classification"},
	{"ForTokenClassification", "token-classification"},
	{"ForQuestionAnswering", "question-answering"},
	{"ForMaskedLM", "fill-mask"},
	{"ForPreTraining", "fill-mask"},
	{"ForCausalLM", "text-generation"},
	{"LMHeadModel", "text-generation"},
	{"MTModel", "translation"},
	{"ForConditionalGeneration", "translation"},
	{"ForImageClassificationWithTeacher", "image-classification"},
	{"ForImageClassification", "image-classification"},
	{"ForImageClassificationMeanPooling", "image-classification"},
}

// TaskForCheckpoint is the task a checkpoint serves by default: a
// sentence-transformers folder's feature extraction, else the task its
// config.json's architectures names by the head's class (…ForMaskedLM:
// fill-mask; a bare …Model of a text encoder: feature extraction), else
// text generation for a GPT and translation for a seq2seq checkpoint,
// as zoo predict picks. Anything else is an error asking for the task.
func TaskForCheckpoint(ck *models.Checkpoint) (string, error) {
	if ck.Family.Name == "bert" && bert.IsSentenceTransformers(ck.Dir) {
		return "feature-extraction", nil
	}
	for _, arch := range ck.Architectures {
		for _, a := range archTasks {
			if strings.HasSuffix(arch, a.suffix) {
				return a.task, nil
			}
		}
		if strings.HasSuffix(arch, "Model") && ck.Family.Name == "bert" {
			return "feature-extraction", nil
		}
	}
	switch ck.Family.Name {
	case "gpt", "llama":
		return "text-generation", nil
	case "seq2seq":
		return "translation", nil
	}
	return "", fmt.Errorf("config.json (model_type %s, architectures %v) names no head the server serves: give the task (Checkpoint.Task)", ck.ModelType, ck.Architectures)
}

// model is one served checkpoint: its pipeline for its task, and its
// queue (a batcher for the encoder tasks, slots for the others).
type model struct {
	name, dir, family, task string
	created                 int64
	cfg                     *Config
	met                     *metrics

	tok       datasets.Tokenizer // counts an input's tokens
	maxTokens int                // the most tokens the model takes, special tokens included (0: not checked)

	classify  func(ctx context.Context, texts []string) ([][]models.Label, error) // every label, best first
	tokens    *bert.TokenClassification
	qa        *bert.QuestionAnswering
	fill      *bert.FillMaskPipeline // with TopK maxFillTopK: a request's top-k are a prefix
	features  *bert.FeatureExtraction
	sentence  *bert.SentenceEmbeddings
	image     *vit.ImageClassification
	translate *seq2seq.Translation
	gen       *generator

	batch   *batcher      // encoder tasks
	dec     *decoder      // text generation with continuous batching
	slots   chan struct{} // the others: MaxConcurrent at once
	waiting atomic.Int64
}

// generator is a decoder-only family's text generation as the server
// calls it.
type generator struct {
	tok      datasets.Tokenizer
	defaults models.TextGenerationConfig
	generate func(ctx context.Context, prompts []string, cfg models.TextGenerationConfig) ([]models.Generated, error)
	// chat renders messages with the checkpoint's chat template and
	// continues them (the answer alone), returning the prompt's ids too.
	chat func(ctx context.Context, msgs []models.ChatMessage, cfg models.TextGenerationConfig) (models.Generated, []int, error)
	// render is chat's prompt: the rendered text and its ids.
	render  func(ctx context.Context, msgs []models.ChatMessage) (string, []int, error)
	context int // the context length, prompt and new tokens
}

// loadModel reads the checkpoint in dir for task ("": its default).
func loadModel(name, dir, task string, cfg *Config, met *metrics) (*model, error) {
	ck, err := models.Open(dir)
	if err != nil {
		return nil, err
	}
	if task == "" {
		if task, err = TaskForCheckpoint(ck); err != nil {
			return nil, err
		}
	}
	if task, err = canonicalTask(task); err != nil {
		return nil, err
	}
	m := &model{name: name, dir: dir, family: ck.Family.Name, task: task, created: time.Now().Unix(), cfg: cfg, met: met}
	needFamily := func(fams ...string) error {
		if !slices.Contains(fams, m.family) {
			return fmt.Errorf("%s needs a %s checkpoint, not %s", task, strings.Join(fams, " or "), m.family)
		}
		return nil
	}
	switch task {
	case "text-classification":
		if err := needFamily("bert", "gpt", "llama"); err != nil {
			return nil, err
		}
		switch m.family {
		case "bert":
			p, err := bert.LoadTextClassification(dir)
			if err != nil {
				return nil, err
			}
			p.TopK, p.BatchSize = 0, cfg.MaxBatch
			m.classify, m.tok, m.maxTokens = p.Predict, p.Tokenizer, p.Model.Config.MaxTokens()
		case "gpt":
			p, err := gpt.LoadTextClassification(dir)
			if err != nil {
				return nil, err
			}
			p.TopK, p.BatchSize = 0, cfg.MaxBatch
			m.classify, m.tok = p.Predict, p.Tokenizer
		case "llama":
			p, err := llama.LoadTextClassification(dir)
			if err != nil {
				return nil, err
			}
			p.TopK, p.BatchSize = 0, cfg.MaxBatch
			m.classify, m.tok = p.Predict, p.Tokenizer
		}
	case "token-classification":
		if err := needFamily("bert"); err != nil {
			return nil, err
		}
		p, err := bert.LoadTokenClassification(dir)
		if err != nil {
			return nil, err
		}
		p.BatchSize = cfg.MaxBatch
		m.tokens, m.tok, m.maxTokens = p, p.Tokenizer, p.Model.Config.MaxTokens()
	case "question-answering":
		if err := needFamily("bert"); err != nil {
			return nil, err
		}
		p, err := bert.LoadQuestionAnswering(dir)
		if err != nil {
			return nil, err
		}
		m.qa, m.tok = p, p.Tokenizer
	case "fill-mask":
		if err := needFamily("bert"); err != nil {
			return nil, err
		}
		p, err := bert.LoadFillMask(dir)
		if err != nil {
			return nil, err
		}
		p.BatchSize, p.TopK = cfg.MaxBatch, maxFillTopK
		m.fill, m.tok, m.maxTokens = p, p.Tokenizer, p.Model.Config.MaxTokens()
	case "feature-extraction":
		if err := needFamily("bert"); err != nil {
			return nil, err
		}
		if bert.IsSentenceTransformers(dir) {
			p, err := bert.LoadSentenceEmbeddings(dir)
			if err != nil {
				return nil, err
			}
			p.BatchSize = cfg.MaxBatch
			m.sentence, m.tok, m.maxTokens = p, p.Tokenizer, 0 // it truncates to max_seq_length
		} else {
			p, err := bert.LoadFeatureExtraction(dir)
			if err != nil {
				return nil, err
			}
			p.BatchSize = cfg.MaxBatch
			m.features, m.tok, m.maxTokens = p, p.Tokenizer, p.Model.Config.MaxTokens()
		}
	case "image-classification":
		if err := needFamily("vit"); err != nil {
			return nil, err
		}
		p, err := vit.LoadImageClassification(dir)
		if err != nil {
			return nil, err
		}
		m.image = p
	case "translation":
		if err := needFamily("seq2seq"); err != nil {
			return nil, err
		}
		p, err := seq2seq.LoadTranslation(dir)
		if err != nil {
			return nil, err
		}
		m.translate, m.tok = p, p.Tokenizer
	case "text-generation":
		if err := needFamily("gpt", "llama"); err != nil {
			return nil, err
		}
		if m.gen, err = loadGenerator(m.family, dir); err != nil {
			return nil, err
		}
		m.tok, m.maxTokens = m.gen.tok, m.gen.context
	}
	switch task {
	case "text-classification", "token-classification", "fill-mask", "feature-extraction":
		m.batch = newBatcher(name, cfg, met, m.runBatch)
	default:
		m.slots = make(chan struct{}, max(cfg.MaxConcurrent, 1))
	}
	if task == "text-generation" && cfg.MaxBatch > 1 {
		m.dec = newDecoder(name, cfg, met, &m.waiting)
		m.dec.acquire = m.acquire
	}
	return m, nil
}

// loadGenerator reads a GPT or LLaMA-family language model, its
// generation settings and its chat template (if it has one).
func loadGenerator(family, dir string) (*generator, error) {
	if family == "llama" {
		p, err := llama.LoadTextGeneration(dir)
		if err != nil {
			return nil, err
		}
		g := &generator{tok: p.Tokenizer, defaults: p.Defaults(), generate: p.Generate, context: p.Model.Config.MaxPositionEmbeddings, render: p.ChatPrompt}
		g.chat = func(ctx context.Context, msgs []models.ChatMessage, cfg models.TextGenerationConfig) (models.Generated, []int, error) {
			_, ids, err := p.ChatPrompt(ctx, msgs)
			if err != nil {
				return models.Generated{}, nil, err
			}
			out, err := p.Chat(ctx, msgs, cfg)
			return out, ids, err
		}
		return g, nil
	}
	p, err := gpt.LoadTextGeneration(dir)
	if err != nil {
		return nil, err
	}
	g := &generator{tok: p.Tokenizer, defaults: p.Defaults(), generate: p.Generate, context: p.Model.Config.NPositions}
	tmpl, terr := models.LoadChatTemplate(dir)
	g.render = func(ctx context.Context, msgs []models.ChatMessage) (string, []int, error) {
		switch {
		case errors.Is(terr, models.ErrNoChatTemplate):
			return "", nil, unprocessable("model", "gpt: chat: the checkpoint has %v (tokenizer_config.json's chat_template): it is a base model; use /v1/completions", models.ErrNoChatTemplate)
		case terr != nil:
			return "", nil, fmt.Errorf("gpt: chat: %w", terr)
		}
		text, err := tmpl.Apply(ctx, msgs, models.ChatOptions{AddGenerationPrompt: true})
		if err != nil {
			return "", nil, fmt.Errorf("gpt: %w", err)
		}
		ids, err := p.Tokenizer.Encode(text)
		if err != nil {
			return "", nil, fmt.Errorf("gpt: chat: tokenize the rendered conversation: %w", err)
		}
		return text, ids, nil
	}
	g.chat = func(ctx context.Context, msgs []models.ChatMessage, cfg models.TextGenerationConfig) (models.Generated, []int, error) {
		text, ids, err := g.render(ctx, msgs)
		if err != nil {
			return models.Generated{}, nil, err
		}
		cfg.NewTextOnly = true
		out, err := p.Generate(ctx, []string{text}, cfg)
		if err != nil {
			return models.Generated{}, nil, err
		}
		return out[0], ids, nil
	}
	return g, nil
}

// maxFillTopK is the most fills per mask a fill-mask request may ask.
// The pipeline runs with this many and each request keeps the first
// top_k: its ranking is a stable sort of the whole vocabulary, so they
// are the fills the pipeline gives with TopK top_k, and requests of any
// top_k share one batch.
const maxFillTopK = 50

// runBatch runs one batch of an encoder task's texts, one result per
// text. (key separates requests that cannot share a batch: none do yet.)
func (m *model) runBatch(ctx context.Context, key int, texts []string) ([]any, error) {
	switch {
	case m.classify != nil:
		return anys(m.classify(ctx, texts))
	case m.tokens != nil:
		return anys(m.tokens.Predict(ctx, texts))
	case m.fill != nil:
		return anys(m.fill.Predict(ctx, texts))
	case m.sentence != nil:
		return anys(m.sentence.Embed(ctx, texts))
	case m.features != nil:
		return anys(m.features.Predict(ctx, texts))
	}
	return nil, fmt.Errorf("model %s: task %s is not batched", m.name, m.task)
}

func anys[T any](xs []T, err error) ([]any, error) {
	if err != nil {
		return nil, err
	}
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out, nil
}

// acquire takes one of the model's slots for an unbatched task, waiting
// in its queue; a full queue is 429.
func (m *model) acquire(ctx context.Context) (release func(), err error) {
	if m.waiting.Add(1) > int64(m.cfg.MaxQueue) {
		m.waiting.Add(-1)
		return nil, queueFull(m.name, m.cfg.MaxQueue)
	}
	g := m.met.queue.WithLabelValues(m.name)
	g.Inc()
	defer func() { m.waiting.Add(-1); g.Dec() }()
	select {
	case m.slots <- struct{}{}:
		return func() { <-m.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func queueFull(name string, n int) *apiError {
	return &apiError{Status: http.StatusTooManyRequests, Type: typeOverloaded, RetryAfter: 1,
		Message: fmt.Sprintf("model %s has %d requests waiting already (the queue's bound): retry after a second", name, n)}
}

func (m *model) close() {
	if m.batch != nil {
		m.batch.close()
	}
	if m.dec != nil {
		m.dec.close()
	}
}

// countTokens is how many tokens text encodes to, the special tokens the
// encoder adds included (2: [CLS] and [SEP], for a BERT).
func (m *model) countTokens(text string) (int, error) {
	ids, err := m.tok.Encode(text)
	if err != nil {
		return 0, err
	}
	if m.task == "text-generation" {
		return max(len(ids), 1), nil
	}
	return len(ids) + 2, nil
}

// checkLength refuses texts longer than the model takes (413 naming the
// input), unless truncate: then the pipeline truncates them, as
// transformers' truncation=True.
func (m *model) checkLength(texts []string, truncate bool, param string) error {
	if m.maxTokens <= 0 || truncate || m.tok == nil {
		return nil
	}
	for i, s := range texts {
		n, err := m.countTokens(s)
		if err != nil {
			return unprocessable(param, "input %d: %v", i, err)
		}
		if n > m.maxTokens {
			return tooLarge(param, "input %d is %d tokens; model %s takes at most %d: shorten it, or set parameters.truncation to true to cut it", i, n, m.name, m.maxTokens)
		}
	}
	return nil
}

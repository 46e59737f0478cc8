package llama

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// This file is the LLaMA family's one-call inference (issue 36/37):
// Hugging Face's pipeline("text-generation") and
// pipeline("text-classification") for llama, qwen2 and mistral
// checkpoints, in the shape of package gpt's.

// DefaultBatchSize is how many texts a pipeline runs through the model at
// once.
const DefaultBatchSize = 8

// DefaultMaxNewTokens, DefaultTemperature and DefaultSeed are what
// TextGeneration.Defaults takes where the checkpoint says nothing, as
// gpt's.
const (
	DefaultMaxNewTokens = 200
	DefaultTemperature  = 0.8
	DefaultSeed         = 1
)

// MaxNewTokensLimit bounds TextGenerationConfig.MaxNewTokens, as
// gpt.MaxNewTokensLimit.
const MaxNewTokensLimit = 1 << 20

// TextGenerationConfig sets how TextGeneration.Generate decodes
// (models.TextGenerationConfig, gpt's too): start from
// TextGeneration.Defaults.
type TextGenerationConfig = models.TextGenerationConfig

// Generated is one prompt's generated text (models.Generated).
type Generated = models.Generated

// TextGeneration is the text-generation pipeline: a LLaMA-family language
// model (LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM), its
// tokenizer and its checkpoint's generation settings. Generate may be
// called from many goroutines at once (the fields must not change while
// it runs): each call decodes with KV caches of its own, and calls its
// OnText on its own goroutine.
type TextGeneration struct {
	Model     *ForCausalLM
	Tokenizer datasets.Tokenizer
	// Generation is the checkpoint's generation settings
	// (generation_config.json, else config.json's fields): Defaults reads
	// them, and their rules (bad_words_ids, no_repeat_ngram_size, …)
	// always apply.
	Generation decode.Generation
	// EOS are the ids that end a text, Defaults' EOS: the loader sets
	// generation_config.json's eos_token_id (an int or a list) where it
	// has one, else config.json's.
	EOS []int
	// BatchSize is how many prompts decode at once, left-padded into one
	// batch (DefaultBatchSize from the loader; 0 or less is
	// DefaultBatchSize).
	BatchSize int
	// ChatTemplate is the checkpoint's chat template
	// (tokenizer_config.json's chat_template), which Chat applies; nil for
	// a base model.
	ChatTemplate *models.ChatTemplate

	chatErr error // why the checkpoint's chat template could not be read, for Chat
}

// LoadTextGeneration reads a LLaMA-family language model checkpoint
// (config.json, model.safetensors, tokenizer.json; LoadForCausalLM, with
// its options), checks its tokenizer against vocab_size and reads its
// generation settings (generation_config.json, else config.json's).
func LoadTextGeneration(dir string, opts ...models.LoadOption) (*TextGeneration, error) {
	m, _, err := LoadForCausalLM(dir, opts...)
	if err != nil {
		return nil, err
	}
	tok, err := loadTokenizer(dir, m.Config)
	if err != nil {
		return nil, err
	}
	gen, err := decode.ReadGeneration(dir, m.Config.Extra, m.Config.EOS())
	if err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	eos := m.Config.EOS()
	raw, err := os.ReadFile(filepath.Join(dir, decode.GenerationFile))
	switch {
	case err == nil:
		var f struct {
			EOS *TokenIDs `json:"eos_token_id"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("llama: %s: eos_token_id: %w", filepath.Join(dir, decode.GenerationFile), err)
		}
		if f.EOS != nil {
			eos = slices.Clone(f.EOS.IDs)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("llama: %w", err)
	}
	chat, chatErr := loadChatTemplate(dir)
	return &TextGeneration{Model: m, Tokenizer: tok, Generation: gen, EOS: eos, BatchSize: DefaultBatchSize,
		ChatTemplate: chat, chatErr: chatErr}, nil
}

// loadTokenizer reads dir's tokenizer.json and refuses one with more
// tokens than the model embeds (Llama checkpoints often pad vocab_size
// past the tokenizer's, so fewer is allowed).
func loadTokenizer(dir string, c Config) (datasets.Tokenizer, error) {
	tok, err := models.LoadTokenizer(dir)
	if err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	if n := tok.VocabSize(); n > c.VocabSize {
		return nil, fmt.Errorf("llama: %s: its tokenizer has %d tokens but the model's vocab_size is %d: use the tokenizer.json the model was trained with", dir, n, c.VocabSize)
	}
	return tok, nil
}

// Defaults is the decoding the checkpoint asks for, read as
// gpt.TextGeneration.Defaults reads it (Hugging Face's meanings):
// max_new_tokens or max_length; do_sample false is greedy, true samples
// with its temperature, top_k and top_p (transformers' defaults 1, 50
// and 1); num_beams, length_penalty and early_stopping; EOS the
// checkpoint's eos_token_id (an int or a list; generation_config.json's
// wins over config.json's). Where the checkpoint says nothing:
// DefaultMaxNewTokens, DefaultTemperature (sampling), DefaultSeed, and
// beam search's GNMT length penalty 0 and early stopping true.
func (t *TextGeneration) Defaults() TextGenerationConfig {
	g := t.Generation
	c := TextGenerationConfig{MaxNewTokens: DefaultMaxNewTokens, Temperature: DefaultTemperature, TopP: 1, Seed: DefaultSeed,
		Beam: 1, EarlyStopping: decode.StopAtBeam, EOS: slices.Clone(t.EOS)}
	switch {
	case g.MaxNewTokens != nil:
		c.MaxNewTokens = *g.MaxNewTokens
	case g.MaxLength != nil:
		c.MaxNewTokens, c.MaxLength = 0, *g.MaxLength
	}
	if g.DoSample != nil {
		c.Temperature = 0
		if *g.DoSample {
			c.Temperature, c.TopK = 1, 50
			if g.Temperature != nil {
				c.Temperature = *g.Temperature
			}
			if g.TopK != nil {
				c.TopK = *g.TopK
			}
			if g.TopP != nil {
				c.TopP = *g.TopP
			}
		}
	}
	if g.NumBeams != nil {
		c.Beam = *g.NumBeams
	}
	if g.LengthPenalty != nil {
		c.LengthPenalty, c.LengthPenaltyStyle = *g.LengthPenalty, decode.HFPenalty
	}
	if g.EarlyStopping != nil {
		c.EarlyStopping = *g.EarlyStopping
	}
	c.RepetitionPenalty = g.RepetitionPenalty
	return c
}

// encode is text's ids as the pipelines tokenize it: inside the
// tokenizer's TemplateProcessing where it has one (Llama's "<s> $A"
// prepends bos_token_id, as transformers' add_special_tokens=True does).
func encode(tok datasets.Tokenizer, text string) ([]int, error) {
	if pe, ok := tok.(datasets.PairEncoder); ok {
		ids, _, err := pe.EncodeWithSpecials(text)
		return ids, err
	}
	return tok.Encode(text)
}

// Generate continues each prompt, BatchSize prompts at a time (in order,
// left-padded into one batch: ForCausalLM's Generate, or BeamSearch for
// cfg.Beam > 1), and returns each prompt's text in order. A prompt is
// tokenized with the tokenizer's template (bos_token_id first where it
// adds it); an empty prompt without one starts from bos_token_id. A
// prompt whose tokens and the new tokens do not fit
// max_position_embeddings (or the sliding window) is an error, as
// ForCausalLM.Generate's. ctx is checked before every token; its error is
// returned, wrapped. No prompts, more than models.MaxPredictInputs, or a
// prompt over models.MaxPredictTextBytes is an error naming it.
func (t *TextGeneration) Generate(ctx context.Context, prompts []string, cfg TextGenerationConfig) ([]Generated, error) {
	if t.Model == nil || t.Tokenizer == nil {
		return nil, fmt.Errorf("llama: text generation needs a model and a tokenizer")
	}
	if err := models.CheckTexts("llama", prompts, "prompt"); err != nil {
		return nil, err
	}
	if err := checkGenerateConfig(cfg); err != nil {
		return nil, err
	}
	ids := make([][]int, len(prompts))
	for i, p := range prompts {
		s, err := t.promptIDs(p)
		if err != nil {
			return nil, fmt.Errorf("llama: prompt %d: %w", i, err)
		}
		ids[i] = s
	}
	batch := cmp.Or(max(t.BatchSize, 0), DefaultBatchSize)
	out := make([]Generated, 0, len(prompts))
	for lo := 0; lo < len(ids); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("llama: generate: %d of %d prompts done: %w", lo, len(ids), err)
		}
		part := ids[lo:min(lo+batch, len(ids))]
		toks, err := t.generate(ctx, part, lo, cfg)
		if err != nil {
			return nil, err
		}
		for i, tk := range toks {
			text, err := models.Continuation(t.Tokenizer, part[i], tk)
			if err != nil {
				return nil, fmt.Errorf("llama: decode the text of prompt %d: %w", lo+i, err)
			}
			if !cfg.NewTextOnly {
				text = prompts[lo+i] + text
			}
			out = append(out, Generated{Text: text, Tokens: tk})
		}
	}
	return out, nil
}

// checkGenerateConfig refuses a config without a length, or with too
// many new tokens.
func checkGenerateConfig(cfg TextGenerationConfig) error {
	if cfg.MaxNewTokens < 0 || cfg.MaxNewTokens == 0 && cfg.MaxLength <= 0 {
		return fmt.Errorf("llama: generate: max_new_tokens %d and max_length %d: set one, or start from TextGeneration.Defaults", cfg.MaxNewTokens, cfg.MaxLength)
	}
	if cfg.MaxNewTokens > MaxNewTokensLimit {
		return fmt.Errorf("llama: max_new_tokens %d is more than %d (llama.MaxNewTokensLimit); generate in parts", cfg.MaxNewTokens, MaxNewTokensLimit)
	}
	return nil
}

// generate decodes one batch of prompts, the first being prompt lo.
func (t *TextGeneration) generate(ctx context.Context, prompts [][]int, lo int, cfg TextGenerationConfig) ([][]int, error) {
	n := cfg.MaxNewTokens
	if n == 0 {
		longest := 0
		for _, p := range prompts {
			longest = max(longest, len(p))
		}
		if n = cfg.MaxLength - longest; n < 1 {
			return nil, fmt.Errorf("llama: generate: max_length %d leaves no room after the %d tokens of prompt batch from %d; set MaxNewTokens", cfg.MaxLength, longest, lo)
		}
	}
	decodeText := func(tokens []int) string {
		s, _ := t.Tokenizer.Decode(tokens)
		return s
	}
	rules := t.Generation.Constraints
	rules.RepetitionPenalty = cfg.RepetitionPenalty
	if cfg.Beam > 1 {
		bc := decode.BeamConfig{Beam: cfg.Beam, LengthPenalty: cfg.LengthPenalty, LengthPenaltyStyle: cfg.LengthPenaltyStyle,
			EarlyStopping: cfg.EarlyStopping, MaxNewTokens: n, EOS: cfg.EOS, StopStrings: cfg.StopStrings, Decode: decodeText,
			Constraints: rules}
		hyps, err := t.Model.beamSearch(ctx, prompts, BeamConfig{BeamConfig: bc, NoCache: cfg.NoCache})
		if err != nil {
			return nil, err
		}
		streams := models.NewStreams(t.Tokenizer, prompts, lo, cfg)
		out := make([][]int, len(hyps))
		for i, h := range hyps {
			out[i] = h[0].Tokens // without the EOS token that ended it
			streams.Whole(i, out[i])
		}
		return out, nil
	}
	sc := decode.SampleConfig{MaxNewTokens: n, Temperature: cfg.Temperature, TopK: cfg.TopK, TopP: cfg.TopP, Seed: cfg.Seed,
		EOS: cfg.EOS, StopStrings: cfg.StopStrings, Decode: decodeText, Constraints: rules}
	streams := models.NewStreams(t.Tokenizer, prompts, lo, cfg)
	sc.OnToken = streams.OnToken()
	toks, err := t.Model.generate(ctx, prompts, GenerateConfig{SampleConfig: sc, NoCache: cfg.NoCache, Stepper: cfg.Stepper})
	if err != nil {
		return nil, err
	}
	streams.Finish(toks, cfg.EOS)
	return toks, nil
}

// TextClassification is the text-classification pipeline for a
// LLaMA-family sequence classifier (LlamaForSequenceClassification,
// Qwen2…, Mistral…) and its tokenizer. It keeps the graphs it compiles,
// by batch size and rounded length, for later batches and calls (see
// ReleaseGraphs); make it with LoadTextClassification and do not copy
// it. Predict may be called from many goroutines at once (the fields must
// not change while it runs): each batch runs a compiled graph that no
// other call holds meanwhile.
type TextClassification struct {
	Model     *ForSequenceClassification
	Tokenizer datasets.Tokenizer
	// TopK is how many labels each text gets, best first: 1 from the
	// loader (the pipeline's top_k default), capped at the number of
	// labels; 0 or less returns every label (top_k=None).
	TopK int
	// BatchSize is how many texts run through the model at once (sorted
	// by length, so that batches pad little); 0 or less is
	// DefaultBatchSize.
	BatchSize int

	graphs models.LastTokenGraphs
}

// LoadTextClassification reads a LLaMA-family sequence classifier
// checkpoint (config.json with its labels, model.safetensors,
// tokenizer.json; LoadForSequenceClassification, strictly, with opts,
// which may not be models.WithLabels) and checks its tokenizer against
// vocab_size.
func LoadTextClassification(dir string, opts ...models.LoadOption) (*TextClassification, error) {
	if models.ReadLoadOptions(opts).Labels != nil {
		return nil, fmt.Errorf("llama: LoadTextClassification predicts with the checkpoint's labels and head: leave models.WithLabels out (fine-tune a new head first)")
	}
	c, _, err := LoadForSequenceClassification(dir, append([]models.LoadOption{models.Strict()}, opts...)...)
	if err != nil {
		return nil, err
	}
	tok, err := loadTokenizer(dir, c.Config)
	if err != nil {
		return nil, err
	}
	return &TextClassification{Model: c, Tokenizer: tok, TopK: 1, BatchSize: DefaultBatchSize}, nil
}

// Predict classifies texts and returns, for each in order, its TopK
// labels with their probabilities, best first, ties in label order: the
// text-classification pipeline's output with function_to_apply softmax.
// A text is tokenized with the tokenizer's template (Llama's prepends
// bos_token_id), and one longer than the model reads (MaxLength) is
// truncated to its first tokens (the pipeline's truncation=True). ctx is
// checked before each batch. No texts, more than models.MaxPredictInputs,
// an empty text or one over models.MaxPredictTextBytes is an error naming
// it.
func (p *TextClassification) Predict(ctx context.Context, texts []string) ([][]models.Label, error) {
	probs, err := p.Probabilities(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([][]models.Label, len(probs))
	for i, row := range probs {
		out[i] = models.TopLabels(row, p.Model.Labels, p.TopK)
	}
	return out, nil
}

// Probabilities is Predict before its top-k: every label's probability
// for each text, (len(texts), len(Labels)), in label order.
func (p *TextClassification) Probabilities(ctx context.Context, texts []string) ([][]float64, error) {
	if p.Model == nil || p.Tokenizer == nil {
		return nil, fmt.Errorf("llama: text classification needs a classifier and a tokenizer")
	}
	c := p.Model
	return models.LastTokenProbabilities(ctx, models.LastTokenClassifier{
		Family: "llama", Model: c, Store: c.Store, Labels: c.Labels, PadID: c.PadID(), MaxLen: c.MaxLength(),
		Encode: func(s string) ([]int, error) { return encode(p.Tokenizer, s) },
		Bytes:  func(b, t int) int64 { return c.Config.ActivationBytes(b, t, false, false) },
		Logits: func(g *layers.Graph, ids, last *gorgonia.Node) (*gorgonia.Node, error) {
			return c.Logits(g, Inputs{IDs: ids}, last)
		},
	}, &p.graphs, texts, cmp.Or(max(p.BatchSize, 0), DefaultBatchSize))
}

// ReleaseGraphs frees the graphs the pipeline compiled, by batch and
// rounded length, for later calls (at most layers.DefaultMaxGraphs). It
// is safe to call while other goroutines predict.
func (p *TextClassification) ReleaseGraphs() { p.graphs.Reset() }

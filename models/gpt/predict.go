package gpt

import (
	"cmp"
	"context"
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// This file is GPT's one-call inference (issue 36): Hugging Face's
// pipeline("text-generation") and pipeline("text-classification") as Go
// types that take strings and return plain values.

// DefaultBatchSize is how many texts a pipeline runs through the model at
// once.
const DefaultBatchSize = 8

// DefaultMaxNewTokens, DefaultTemperature and DefaultSeed are what
// TextGeneration.Defaults takes where the checkpoint says nothing: zoo
// generate's defaults.
const (
	DefaultMaxNewTokens = 200
	DefaultTemperature  = 0.8
	DefaultSeed         = 1
)

// TextGeneration is the text-generation pipeline: a GPT language model,
// its tokenizer and its checkpoint's generation settings. Generate may be
// called from many goroutines at once (the fields must not change while
// it runs): each call decodes with graphs and KV caches of its own, and
// calls its OnText on its own goroutine.
type TextGeneration struct {
	Model     *Model
	Tokenizer datasets.Tokenizer
	// Generation is the checkpoint's generation settings
	// (generation_config.json, else config.json's fields): Defaults reads
	// them, and their rules (bad_words_ids, no_repeat_ngram_size, …)
	// always apply.
	Generation decode.Generation
	// BatchSize is how many prompts decode at once, left-padded into one
	// batch (DefaultBatchSize from the loader; 0 or less is
	// DefaultBatchSize).
	BatchSize int
}

// TextGenerationConfig sets how TextGeneration.Generate decodes: start
// from TextGeneration.Defaults (the checkpoint's settings). It is
// models.TextGenerationConfig, which LLaMA's pipeline shares; MaxNewTokens
// is at most MaxNewTokensLimit.
type TextGenerationConfig = models.TextGenerationConfig

// Generated is one prompt's generated text: the text-generation
// pipeline's {"generated_text"}, and its new tokens (models.Generated).
type Generated = models.Generated

// LoadTextGeneration reads a GPT-2 language model checkpoint (config.json,
// model.safetensors, tokenizer.json; Load, with its options), checks its
// tokenizer against it and reads its generation settings (ReadGeneration).
func LoadTextGeneration(dir string, opts ...models.LoadOption) (*TextGeneration, error) {
	m, _, err := Load(dir, opts...)
	if err != nil {
		return nil, err
	}
	tok, err := models.LoadTokenizer(dir)
	if err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	if err := CheckTokenizer(m, tok); err != nil {
		return nil, fmt.Errorf("gpt: %s: %w", dir, err)
	}
	gen, err := ReadGeneration(dir, m.Config)
	if err != nil {
		return nil, err
	}
	return &TextGeneration{Model: m, Tokenizer: tok, Generation: gen, BatchSize: DefaultBatchSize}, nil
}

// Defaults is the decoding the checkpoint asks for, as zoo generate reads
// it (Hugging Face's meanings): max_new_tokens, or max_length (MaxLength);
// do_sample false is greedy, true samples with its temperature, top_k and
// top_p (transformers' defaults 1, 50 and 1); num_beams, length_penalty
// (Hugging Face's style) and early_stopping; EOS the model's
// eos_token_id, as transformers' generate stops there. Where the
// checkpoint says nothing: zoo generate's DefaultMaxNewTokens,
// DefaultTemperature (sampling) and DefaultSeed, and beam search's
// GNMT length penalty 0 and early stopping true.
func (t *TextGeneration) Defaults() TextGenerationConfig {
	g := t.Generation
	c := TextGenerationConfig{MaxNewTokens: DefaultMaxNewTokens, Temperature: DefaultTemperature, TopP: 1, Seed: DefaultSeed,
		Beam: 1, EarlyStopping: decode.StopAtBeam, EOS: []int{t.Model.Config.EOSTokenID}}
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

// Generate continues each prompt, BatchSize prompts at a time (in order,
// left-padded into one batch: Model.GenerateContext, or
// Model.BeamSearchContext for cfg.Beam > 1), and returns each prompt's
// text in order. An empty prompt starts from bos_token_id, as
// transformers' generate without input ids; a prompt longer than
// n_positions tokens is read through the sliding window (its last
// n_positions tokens). ctx is checked before every token; its error is
// returned, wrapped. No prompts, more than models.MaxPredictInputs, or a
// prompt over models.MaxPredictTextBytes is an error naming it.
func (t *TextGeneration) Generate(ctx context.Context, prompts []string, cfg TextGenerationConfig) ([]Generated, error) {
	if t.Model == nil || t.Tokenizer == nil {
		return nil, fmt.Errorf("gpt: text generation needs a model and a tokenizer")
	}
	if err := models.CheckTexts("gpt", prompts, "prompt"); err != nil {
		return nil, err
	}
	if cfg.MaxNewTokens < 0 || cfg.MaxNewTokens == 0 && cfg.MaxLength <= 0 {
		return nil, fmt.Errorf("gpt: generate: max_new_tokens %d and max_length %d: set one, or start from TextGeneration.Defaults", cfg.MaxNewTokens, cfg.MaxLength)
	}
	ids := make([][]int, len(prompts))
	for i, p := range prompts {
		s, err := t.Tokenizer.Encode(p)
		if err != nil {
			return nil, fmt.Errorf("gpt: prompt %d: %w", i, err)
		}
		if len(s) == 0 {
			s = []int{t.Model.Config.BOSTokenID}
		}
		ids[i] = s
	}
	batch := cmp.Or(max(t.BatchSize, 0), DefaultBatchSize)
	out := make([]Generated, 0, len(prompts))
	for lo := 0; lo < len(ids); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("gpt: generate: %d of %d prompts done: %w", lo, len(ids), err)
		}
		part := ids[lo:min(lo+batch, len(ids))]
		toks, err := t.generate(ctx, part, lo, cfg)
		if err != nil {
			return nil, err
		}
		for i, tk := range toks {
			text, err := t.Tokenizer.Decode(tk)
			if err != nil {
				return nil, fmt.Errorf("gpt: decode the text of prompt %d: %w", lo+i, err)
			}
			if !cfg.NewTextOnly {
				text = prompts[lo+i] + text
			}
			out = append(out, Generated{Text: text, Tokens: tk})
		}
	}
	return out, nil
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
			return nil, fmt.Errorf("gpt: generate: max_length %d leaves no room after the %d tokens of prompt batch from %d; set MaxNewTokens", cfg.MaxLength, longest, lo)
		}
	}
	decodeText := func(tokens []int) string {
		s, _ := t.Tokenizer.Decode(tokens)
		return s
	}
	g := t.Generation
	g.RepetitionPenalty = cfg.RepetitionPenalty
	gen := &g
	if cfg.Beam > 1 {
		hyps, err := t.Model.BeamSearchContext(ctx, prompts, BeamConfig{Beam: cfg.Beam, LengthPenalty: cfg.LengthPenalty,
			LengthPenaltyStyle: cfg.LengthPenaltyStyle, EarlyStopping: cfg.EarlyStopping, MaxNewTokens: n, EOS: cfg.EOS,
			StopStrings: cfg.StopStrings, Decode: decodeText, Generation: gen, NoCache: cfg.NoCache})
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
	gc := GenerateConfig{MaxNewTokens: n, Temperature: cfg.Temperature, TopK: cfg.TopK, TopP: cfg.TopP, Seed: cfg.Seed,
		EOS: cfg.EOS, StopStrings: cfg.StopStrings, Decode: decodeText, Generation: gen, NoCache: cfg.NoCache, Stepper: cfg.Stepper}
	streams := models.NewStreams(t.Tokenizer, prompts, lo, cfg)
	gc.OnToken = streams.OnToken()
	toks, err := t.Model.GenerateContext(ctx, prompts, gc)
	if err != nil {
		return nil, err
	}
	streams.Finish(toks, cfg.EOS)
	return toks, nil
}

// TextClassification is the text-classification pipeline for a GPT-2
// sequence classifier (GPT2ForSequenceClassification) and its tokenizer.
// It keeps the graphs it compiles, by batch size and rounded length, for
// later batches and calls (see ReleaseGraphs); make it with
// LoadTextClassification and do not copy it. Predict may be called from
// many goroutines at once (the fields must not change while it runs):
// each batch runs a compiled graph that no other call holds meanwhile.
type TextClassification struct {
	Model     *Classifier
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

// LoadTextClassification reads a GPT-2 sequence classifier checkpoint
// (config.json with its labels, model.safetensors, tokenizer.json;
// LoadForSequenceClassification, strictly, with opts, which may not be
// models.WithLabels) and checks its tokenizer against it.
func LoadTextClassification(dir string, opts ...models.LoadOption) (*TextClassification, error) {
	if models.ReadLoadOptions(opts).Labels != nil {
		return nil, fmt.Errorf("gpt: LoadTextClassification predicts with the checkpoint's labels and head: leave models.WithLabels out (fine-tune a new head first)")
	}
	c, _, err := LoadForSequenceClassification(dir, append([]models.LoadOption{models.Strict()}, opts...)...)
	if err != nil {
		return nil, err
	}
	tok, err := models.LoadTokenizer(dir)
	if err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	if err := CheckTokenizer(c.Model, tok); err != nil {
		return nil, fmt.Errorf("gpt: %s: %w", dir, err)
	}
	return &TextClassification{Model: c, Tokenizer: tok, TopK: 1, BatchSize: DefaultBatchSize}, nil
}

// Predict classifies texts and returns, for each in order, its TopK
// labels with their probabilities, best first, ties in label order: the
// text-classification pipeline's output with function_to_apply softmax
// (every GPT classifier has at least two labels and a single-label
// problem_type). A text is encoded without special tokens, as GPT-2's
// tokenizer does, and one longer than n_positions tokens is truncated to
// its first n_positions (the pipeline's truncation=True). ctx is checked
// before each batch. No texts, more than models.MaxPredictInputs, an
// empty text or one over models.MaxPredictTextBytes is an error naming
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
		return nil, fmt.Errorf("gpt: text classification needs a classifier and a tokenizer")
	}
	c := p.Model
	return models.LastTokenProbabilities(ctx, models.LastTokenClassifier{
		Family: "gpt", Model: c, Store: c.Store, Labels: c.Labels, PadID: c.PadID(), MaxLen: c.Config.NPositions,
		Encode: p.Tokenizer.Encode,
		Bytes:  func(b, t int) int64 { return c.StepBytes(b, t, false) },
		Logits: func(g *layers.Graph, ids, last *gorgonia.Node) (*gorgonia.Node, error) {
			return c.Logits(g, Inputs{IDs: ids}, last)
		},
	}, &p.graphs, texts, cmp.Or(max(p.BatchSize, 0), DefaultBatchSize))
}

// ReleaseGraphs frees the graphs the pipeline compiled, by batch and
// rounded length, for later calls (at most layers.DefaultMaxGraphs). It
// is safe to call while other goroutines predict.
func (p *TextClassification) ReleaseGraphs() { p.graphs.Reset() }

package seq2seq

import (
	"context"
	"fmt"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/models"
)

// This file is seq2seq's one-call inference (issue 36): Hugging Face's
// pipeline("translation") as a Go type that takes strings and returns
// strings.

// DefaultBatchSize is how many texts Translation decodes at once.
const DefaultBatchSize = 8

// DefaultBeam and DefaultLengthPenalty are the beam search that
// DecodeDefaults takes where the checkpoint sets no num_beams or
// length_penalty: zoo translate's (beam 4, GNMT's length penalty 0.6).
const (
	DefaultBeam          = 4
	DefaultLengthPenalty = 0.6
)

// Translation is the translation pipeline: a Marian model, its tokenizer
// and the decoding its checkpoint asks for. Translate and TranslateNBest
// may be called from many goroutines at once (the fields must not change
// while they run): each batch takes encoder and step graphs and KV caches
// of its own.
type Translation struct {
	Model     *Model
	Tokenizer datasets.Tokenizer
	// Decode is how texts are decoded: the checkpoint's settings
	// (DecodeDefaults) from the loader. Beam 1 decodes greedily.
	Decode DecodeConfig
	// BatchSize is how many texts decode at once, the texts sorted by
	// length so that batches pad little (DefaultBatchSize from the
	// loader; 0 or less is DefaultBatchSize).
	BatchSize int
}

// LoadTranslation reads a Marian checkpoint (config.json,
// model.safetensors, tokenizer.json and, if there is one,
// generation_config.json; Load, with its options), checks its tokenizer
// against it, and decodes as its generation settings say (DecodeDefaults).
func LoadTranslation(dir string, opts ...models.LoadOption) (*Translation, error) {
	m, _, err := Load(dir, opts...)
	if err != nil {
		return nil, err
	}
	tok, err := models.LoadTokenizer(dir)
	if err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	if err := CheckTokenizer(m, tok); err != nil {
		return nil, fmt.Errorf("seq2seq: %s: %w", dir, err)
	}
	gen, err := ReadGeneration(dir, m.Config)
	if err != nil {
		return nil, err
	}
	return &Translation{Model: m, Tokenizer: tok, Decode: DecodeDefaults(gen), BatchSize: DefaultBatchSize}, nil
}

// DecodeDefaults is the decoding that generation settings g (ReadGeneration)
// ask for, as zoo translate reads them: num_beams (else DefaultBeam),
// num_return_sequences (NBest, else 1), length_penalty in Hugging Face's
// style (else DefaultLengthPenalty in GNMT's), early_stopping (else
// decode.StopAtBeam), and g's max_length or max_new_tokens and rules
// (bad_words_ids, no_repeat_ngram_size, forced_eos_token_id) through
// Generation.
func DecodeDefaults(g decode.Generation) DecodeConfig {
	c := DecodeConfig{Beam: DefaultBeam, NBest: 1, LengthPenalty: DefaultLengthPenalty, EarlyStopping: decode.StopAtBeam, Generation: &g}
	if g.NumBeams != nil {
		c.Beam = *g.NumBeams
	}
	if g.NumReturnSequences != nil {
		c.NBest = *g.NumReturnSequences
	}
	if g.LengthPenalty != nil {
		c.LengthPenalty, c.LengthPenaltyStyle = *g.LengthPenalty, decode.HFPenalty
	}
	if g.EarlyStopping != nil {
		c.EarlyStopping = *g.EarlyStopping
	}
	return c
}

// Translate translates texts and returns each one's best translation, in
// order: the translation pipeline's translation_text. Texts are trimmed
// of white space and decoded BatchSize at a time, sorted by length
// (TranslateContext, with Decode; greedily for a beam of 1, else by beam
// search); a text longer than the model's max_len tokens is truncated to
// them. The translations leave out special tokens (skip_special_tokens).
// ctx is checked before each batch; its error is returned, wrapped. No
// texts, more than models.MaxPredictInputs, an empty (or blank) text or
// one over models.MaxPredictTextBytes is an error naming it.
func (t *Translation) Translate(ctx context.Context, texts []string) ([]string, error) {
	cfg := t.Decode
	cfg.NBest = 1
	cands, err := t.translate(ctx, texts, cfg)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c[0].Text
	}
	return out, nil
}

// TranslateNBest is Translate returning each text's n best translations
// with their scores (log-probability with the length penalty), best
// first: 1 ≤ n ≤ Decode.Beam (n 1 with a beam of 1 is the greedy
// translation, with score 0).
func (t *Translation) TranslateNBest(ctx context.Context, texts []string, n int) ([][]Candidate, error) {
	cfg := t.Decode
	if n < 1 || n > max(cfg.Beam, 1) {
		return nil, fmt.Errorf("seq2seq: n-best %d: want 1 to the beam, %d", n, cfg.Beam)
	}
	cfg.NBest = n
	return t.translate(ctx, texts, cfg)
}

func (t *Translation) translate(ctx context.Context, texts []string, cfg DecodeConfig) ([][]Candidate, error) {
	if t.Model == nil || t.Tokenizer == nil {
		return nil, fmt.Errorf("seq2seq: translation needs a model and a tokenizer")
	}
	if len(texts) == 0 {
		return nil, fmt.Errorf("seq2seq: no texts to translate")
	}
	if len(texts) > models.MaxPredictInputs {
		return nil, fmt.Errorf("seq2seq: %d texts is more than %d (models.MaxPredictInputs): split them into calls", len(texts), models.MaxPredictInputs)
	}
	for i, s := range texts {
		if len(s) > models.MaxPredictTextBytes {
			return nil, fmt.Errorf("seq2seq: text %d has %d bytes, more than %d (models.MaxPredictTextBytes)", i, len(s), models.MaxPredictTextBytes)
		}
	}
	batch := t.BatchSize
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	greedy := cfg.Beam <= 1
	if greedy {
		cfg.Beam, cfg.NBest = 1, 1
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := Ensemble{t.Model}
	maxLen := e.MaxLen()
	if err := models.CheckMemory(e.DecodeBytes(min(batch, len(texts)), cfg.Beam, maxLen, maxLen),
		fmt.Sprintf("seq2seq: translate %d texts at a time with beam %d", min(batch, len(texts)), cfg.Beam), "lower the batch size or the beam"); err != nil {
		return nil, err
	}
	out, _, err := e.Translate(ctx, t.Tokenizer, texts, cfg, greedy, batch, nil)
	return out, err
}

package gpt

import (
	"context"
	"fmt"
	"math"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// GenerateConfig sets how Generate decodes. Start from Greedy or Sampling.
type GenerateConfig struct {
	MaxNewTokens    int     // tokens to add to each prompt, > 0
	Temperature     float64 // 0 is greedy (argmax); > 0 samples from softmax(logits/Temperature)
	TopK            int     // sample among the k most likely tokens; 0 keeps all
	TopP            float64 // nucleus: sample among the fewest tokens whose mass reaches TopP, in (0, 1]; 1 keeps all
	Seed            uint64  // seeds sampling: equal seeds give equal tokens
	EOS             []int   // stop a row after any of these tokens (it is kept)
	StopStrings     []string
	Decode          func(tokens []int) string // turns a row's new tokens into text, for StopStrings
	NoCache         bool                      // recompute the whole context every step instead of using the KV cache
	NoSlidingWindow bool                      // a context longer than n_positions is an error instead of being cropped to its last n_positions tokens
	OnToken         func(row, token int)      // called with each new token as it is produced
	// Stepper, when set, makes the decoding's stepper in place of the
	// model's own (layers.NewStepperFunc; package serve's continuous
	// batching).
	Stepper layers.NewStepperFunc
	// Generation is the checkpoint's generation settings (ReadGeneration);
	// nil reads the model's config.json (Config.Generation). Its rules
	// (bad_words_ids, no_repeat_ngram_size, forced_eos_token_id, the
	// token forced at the last step) always apply, as transformers'
	// generate applies them; its defaults (max_length, do_sample,
	// num_beams, …) are the caller's to take, as zoo generate does for
	// flags it is not given.
	Generation *decode.Generation
}

// MaxNewTokensLimit bounds MaxNewTokens: a million tokens, hours of CPU
// even for a tiny model; more is taken for a mistake (generate in parts
// instead). Tokens are kept as they come, so a limit costs nothing until
// it is reached.
const MaxNewTokensLimit = 1 << 20

// Greedy decodes n tokens by argmax.
func Greedy(n int) GenerateConfig { return GenerateConfig{MaxNewTokens: n, TopP: 1} }

// Sampling samples n tokens at the given temperature with a seed.
func Sampling(n int, temperature float64, seed uint64) GenerateConfig {
	return GenerateConfig{MaxNewTokens: n, Temperature: temperature, TopP: 1, Seed: seed}
}

// Validate reports settings that cannot be used.
func (c GenerateConfig) Validate() error {
	if err := c.sampling().Validate(); err != nil {
		return fmt.Errorf("gpt: %w", err)
	}
	return checkMaxNew(c.MaxNewTokens)
}

func checkMaxNew(n int) error {
	if n > MaxNewTokensLimit {
		return fmt.Errorf("gpt: max_new_tokens %d is more than %d (gpt.MaxNewTokensLimit); generate in parts", n, MaxNewTokensLimit)
	}
	return nil
}

// rules are the generation constraints of g, or of m's config.json.
func (m *Model) rules(g *decode.Generation) (decode.Constraints, error) {
	if g != nil {
		return g.Constraints, nil
	}
	gen, err := m.Config.Generation()
	return gen.Constraints, err
}

func (c GenerateConfig) sampling() decode.SampleConfig {
	return decode.SampleConfig{
		MaxNewTokens: c.MaxNewTokens, Temperature: c.Temperature, TopK: c.TopK, TopP: c.TopP, Seed: c.Seed,
		EOS: c.EOS, StopStrings: c.StopStrings, Decode: c.Decode, OnToken: c.OnToken,
	}
}

// Generate continues each prompt (token ids; prompts may differ in length
// and are left-padded into one batch) and returns the new tokens of each.
//
// With the KV cache (the default) the prompts run once and every later
// token costs one single-token pass over the cached keys and values. Once a
// row's context fills n_positions, decoding goes on with a sliding window,
// as nanoGPT does: each step reruns the last n_positions tokens, without the
// cache. Cached and uncached decoding give the same tokens. Sampling is
// package decode's Sample.
//
// The checkpoint's generation rules apply (see GenerateConfig.Generation).
//
// The model keeps the graphs it compiles, by batch and rounded lengths,
// for later calls (see ReleaseGraphs). Safe for concurrent use by multiple
// goroutines: each call takes graphs and KV caches of its own, and calls
// cfg's OnToken and Decode on its own goroutine.
func (m *Model) Generate(prompts [][]int, cfg GenerateConfig) ([][]int, error) {
	return m.GenerateContext(context.Background(), prompts, cfg)
}

// GenerateContext is Generate that stops before the next token once ctx
// is done, returning an error that wraps ctx.Err().
func (m *Model) GenerateContext(ctx context.Context, prompts [][]int, cfg GenerateConfig) ([][]int, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := m.checkPrompts(prompts, cfg.NoSlidingWindow, "gpt generate"); err != nil {
		return nil, err
	}
	if err := m.checkDecodeMemory(prompts, len(prompts), cfg.MaxNewTokens, "gpt generate"); err != nil {
		return nil, err
	}
	sc := cfg.sampling()
	var err error
	if sc.Constraints, err = m.rules(cfg.Generation); err != nil {
		return nil, err
	}
	st, done, err := cfg.Stepper.Start(m.causalLM(), layers.CausalOptions{MaxNewTokens: cfg.MaxNewTokens, NoCache: cfg.NoCache, NoSlidingWindow: cfg.NoSlidingWindow})
	if err != nil {
		return nil, err
	}
	defer done()
	return decode.Sample(withContext(ctx, st), prompts, sc) // its errors name the step, the stepper's the model
}

// BeamConfig sets BeamSearch.
type BeamConfig struct {
	Beam  int // beams per prompt, ≥ 1
	NBest int // hypotheses returned per prompt, at most Beam; 0 means 1
	// LengthPenalty is α: score = log P / lp(|y|), |y| the new tokens
	// (an EOS token included), lp GNMT's ((5+|y|)/6)^α or, with
	// LengthPenaltyStyle decode.HFPenalty, Hugging Face's |y|^α (the
	// generated length, as transformers since 4.36 counts it: without the
	// prompt); 0 ranks by log P.
	LengthPenalty      float64
	LengthPenaltyStyle decode.LengthPenaltyStyle
	MaxNewTokens       int // most tokens per hypothesis, an EOS token included, > 0
	// EarlyStopping says when a prompt is done (Hugging Face's
	// early_stopping); the zero value stops at Beam finished hypotheses.
	EarlyStopping   decode.Stopping
	EOS             []int // tokens that finish a hypothesis
	StopStrings     []string
	Decode          func(tokens []int) string // turns a hypothesis's tokens into text, for StopStrings
	NoCache         bool                      // recompute the whole context every step instead of using the KV cache
	NoSlidingWindow bool                      // a context longer than n_positions is an error instead of being cropped
	// Generation is as in GenerateConfig: nil reads config.json's rules.
	Generation *decode.Generation
}

// Validate reports settings that cannot be used.
func (c BeamConfig) Validate() error {
	if err := c.beam().Validate(); err != nil {
		return fmt.Errorf("gpt: %w", err)
	}
	return checkMaxNew(c.MaxNewTokens)
}

func (c BeamConfig) beam() decode.BeamConfig {
	return decode.BeamConfig{
		Beam: c.Beam, NBest: c.NBest, LengthPenalty: c.LengthPenalty, LengthPenaltyStyle: c.LengthPenaltyStyle, MaxNewTokens: c.MaxNewTokens,
		EarlyStopping: c.EarlyStopping, EOS: c.EOS, StopStrings: c.StopStrings, Decode: c.Decode,
	}
}

// Hypothesis is one beam-search output: its new tokens (without the EOS
// token that ended it), log-probability and score.
type Hypothesis = decode.Hypothesis

// BeamSearch continues each of B prompts (token ids, of any lengths)
// keeping cfg.Beam hypotheses, and returns each prompt's cfg.NBest best,
// ordered by score, best first. The model decodes B·Beam rows at once,
// through the KV cache (reordered as beams move) and the sliding window as
// Generate does. Package decode's BeamSearch has the rules: 2·Beam
// candidates per step, early stopping as cfg.EarlyStopping says, the
// length penalty of cfg.LengthPenaltyStyle, the checkpoint's generation
// rules; a beam of one is greedy decoding. Safe for concurrent use by
// multiple goroutines, as Generate is.
func (m *Model) BeamSearch(prompts [][]int, cfg BeamConfig) ([][]Hypothesis, error) {
	return m.BeamSearchContext(context.Background(), prompts, cfg)
}

// BeamSearchContext is BeamSearch that stops before the next step once
// ctx is done, returning an error that wraps ctx.Err().
func (m *Model) BeamSearchContext(ctx context.Context, prompts [][]int, cfg BeamConfig) ([][]Hypothesis, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := m.checkPrompts(prompts, cfg.NoSlidingWindow, "gpt beam search"); err != nil {
		return nil, err
	}
	if cfg.Beam > math.MaxInt/len(prompts) {
		return nil, fmt.Errorf("gpt beam search: %d prompts × beam %d rows overflow int; lower the beam", len(prompts), cfg.Beam)
	}
	if err := m.checkDecodeMemory(prompts, len(prompts)*cfg.Beam, cfg.MaxNewTokens, "gpt beam search"); err != nil {
		return nil, err
	}
	bc := cfg.beam()
	var err error
	if bc.Constraints, err = m.rules(cfg.Generation); err != nil {
		return nil, err
	}
	st, err := m.newStepper(cfg.MaxNewTokens, cfg.NoCache, cfg.NoSlidingWindow)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return decode.BeamSearch(withContext(ctx, st), prompts, bc)
}

// ctxStepper is a decode.Stepper that refuses to step once ctx is done.
type ctxStepper struct {
	ctx context.Context
	decode.Stepper
}

// withContext is st checking ctx before each step (st itself when ctx
// is never done).
func withContext(ctx context.Context, st decode.Stepper) decode.Stepper {
	if ctx.Done() == nil {
		return st
	}
	return ctxStepper{ctx, st}
}

// Step returns ctx's error, wrapped, once ctx is done, else st's logits.
func (s ctxStepper) Step(seqs [][]int) ([][]float64, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, fmt.Errorf("gpt: stopped: %w", err)
	}
	return s.Stepper.Step(seqs)
}

// checkDecodeMemory refuses decoding rows sequences (prompts times beams)
// whose graphs and KV caches would not fit in the machine's memory, before
// anything is built: the forward pass of rows contexts as long as the
// longest prompt plus the new tokens (at most n_positions).
func (m *Model) checkDecodeMemory(prompts [][]int, rows, maxNew int, where string) error {
	longest := 0
	for _, p := range prompts {
		longest = max(longest, len(p))
	}
	t := m.Config.NPositions
	if maxNew < t-longest { // longest+maxNew < n_positions, without overflow
		t = longest + maxNew
	}
	return models.CheckMemory(m.Config.ActivationBytes(rows, t, true, false),
		fmt.Sprintf("%s: %d rows of up to %d tokens", where, rows, t), "lower the number of prompts, the beam or max_new_tokens")
}

// checkPrompts reports an empty batch, an empty prompt, a token outside
// the vocabulary, and without the sliding window a prompt longer than
// n_positions.
func (m *Model) checkPrompts(prompts [][]int, noSlidingWindow bool, where string) error {
	if len(prompts) == 0 {
		return fmt.Errorf("%s: no prompts", where)
	}
	for r, p := range prompts {
		if len(p) == 0 {
			return fmt.Errorf("%s: prompt %d is empty; start it with a token such as bos_token_id %d", where, r, m.Config.BOSTokenID)
		}
		if len(p) > m.Config.NPositions && noSlidingWindow {
			return fmt.Errorf("%s: prompt %d has %d tokens, more than the context of %d (n_positions); shorten it or allow the sliding window", where, r, len(p), m.Config.NPositions)
		}

		for i, id := range p {
			if id < 0 || id >= m.Config.VocabSize {
				return fmt.Errorf("%s: prompt %d token %d is id %d, outside the vocabulary [0, %d)", where, r, i, id, m.Config.VocabSize)
			}
		}
	}
	return nil
}

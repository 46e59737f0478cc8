package gpt

import (
	"fmt"

	"github.com/d73a19ff/zoo/decode"
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
}

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
	return nil
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
// The model keeps the graphs it compiles, by batch and rounded lengths,
// for later calls (see ReleaseGraphs). Safe for concurrent use by multiple
// goroutines: each call takes graphs and KV caches of its own, and calls
// cfg's OnToken and Decode on its own goroutine.
func (m *Model) Generate(prompts [][]int, cfg GenerateConfig) ([][]int, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := m.checkPrompts(prompts, cfg.NoSlidingWindow, "gpt generate"); err != nil {
		return nil, err
	}
	if err := m.checkDecodeMemory(prompts, len(prompts), cfg.MaxNewTokens, "gpt generate"); err != nil {
		return nil, err
	}
	st := m.newStepper(cfg.MaxNewTokens, cfg.NoCache, cfg.NoSlidingWindow)
	defer st.close()
	return decode.Sample(st, prompts, cfg.sampling()) // its errors name the step, the stepper's the model
}

// BeamConfig sets BeamSearch.
type BeamConfig struct {
	Beam          int     // beams per prompt, ≥ 1
	NBest         int     // hypotheses returned per prompt, at most Beam; 0 means 1
	LengthPenalty float64 // GNMT's α: score = log P / ((5+|y|)/6)^α; 0 ranks by log P
	MaxNewTokens  int     // most tokens per hypothesis, an EOS token included, > 0
	// EarlyStopping says when a prompt is done (Hugging Face's
	// early_stopping); the zero value stops at Beam finished hypotheses.
	EarlyStopping   decode.Stopping
	EOS             []int // tokens that finish a hypothesis
	StopStrings     []string
	Decode          func(tokens []int) string // turns a hypothesis's tokens into text, for StopStrings
	NoCache         bool                      // recompute the whole context every step instead of using the KV cache
	NoSlidingWindow bool                      // a context longer than n_positions is an error instead of being cropped
}

// Validate reports settings that cannot be used.
func (c BeamConfig) Validate() error {
	if err := c.beam().Validate(); err != nil {
		return fmt.Errorf("gpt: %w", err)
	}
	return nil
}

func (c BeamConfig) beam() decode.BeamConfig {
	return decode.BeamConfig{
		Beam: c.Beam, NBest: c.NBest, LengthPenalty: c.LengthPenalty, MaxNewTokens: c.MaxNewTokens,
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
// candidates per step, early stopping once Beam hypotheses have finished,
// GNMT's length penalty; a beam of one is greedy decoding. Safe for
// concurrent use by multiple goroutines, as Generate is.
func (m *Model) BeamSearch(prompts [][]int, cfg BeamConfig) ([][]Hypothesis, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := m.checkPrompts(prompts, cfg.NoSlidingWindow, "gpt beam search"); err != nil {
		return nil, err
	}
	if err := m.checkDecodeMemory(prompts, len(prompts)*cfg.Beam, cfg.MaxNewTokens, "gpt beam search"); err != nil {
		return nil, err
	}
	st := m.newStepper(cfg.MaxNewTokens, cfg.NoCache, cfg.NoSlidingWindow)
	defer st.close()
	return decode.BeamSearch(st, prompts, cfg.beam())
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
	t := min(m.Config.NPositions, longest+maxNew)
	return models.CheckMemory(m.Config.ActivationBytes(rows, t, true, false),
		fmt.Sprintf("%s: %d rows of up to %d tokens", where, rows, t), "lower the number of prompts, the beam or max_new_tokens")
}

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

package llama

import (
	"context"
	"fmt"

	"github.com/d73a19ff/zoo/decode"
)

// PromptIDs is prompt's ids as Generate tokenizes it: inside the
// tokenizer's template (bos_token_id first where it adds it), or
// bos_token_id alone for an empty prompt without one.
func (t *TextGeneration) PromptIDs(prompt string) ([]int, error) {
	if t.Model == nil || t.Tokenizer == nil {
		return nil, fmt.Errorf("llama: text generation needs a model and a tokenizer")
	}
	s, err := t.promptIDs(prompt)
	if err != nil {
		return nil, fmt.Errorf("llama: prompt: %w", err)
	}
	return s, nil
}

// promptIDs is PromptIDs on a pipeline with a model and a tokenizer, its
// errors for the caller to wrap.
func (t *TextGeneration) promptIDs(prompt string) ([]int, error) {
	s, err := encode(t.Tokenizer, prompt)
	if err != nil {
		return nil, err
	}
	if len(s) == 0 {
		if t.Model.Config.BOSTokenID == nil {
			return nil, fmt.Errorf("it has no tokens and the model has no bos_token_id to start from")
		}
		s = []int{*t.Model.Config.BOSTokenID}
	}
	return s, nil
}

// NBest decodes one prompt's ids (PromptIDs, or ChatPrompt's) by beam
// search with cfg.Beam beams, as Generate does for cfg.Beam > 1 (the
// checkpoint's rules, cfg's repetition penalty, EOS, stop strings and
// NoCache), and returns its n best hypotheses, best first, with their
// scores (1 ≤ n ≤ cfg.Beam): transformers' num_return_sequences. cfg's
// OnText is not called. Safe for concurrent use, as Generate.
func (t *TextGeneration) NBest(ctx context.Context, ids []int, cfg TextGenerationConfig, n int) ([]decode.Hypothesis, error) {
	if t.Model == nil || t.Tokenizer == nil {
		return nil, fmt.Errorf("llama: text generation needs a model and a tokenizer")
	}
	if err := checkGenerateConfig(cfg); err != nil {
		return nil, err
	}
	if cfg.Beam < 1 || n < 1 || n > cfg.Beam {
		return nil, fmt.Errorf("llama: n-best: beam %d and n %d: need 1 ≤ n ≤ beam", cfg.Beam, n)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("llama: n-best: the prompt has no tokens")
	}
	maxNew := cfg.MaxNewTokens
	if maxNew == 0 {
		if maxNew = cfg.MaxLength - len(ids); maxNew < 1 {
			return nil, fmt.Errorf("llama: n-best: max_length %d leaves no room after the prompt's %d tokens; set MaxNewTokens", cfg.MaxLength, len(ids))
		}
	}
	rules := t.Generation.Constraints
	rules.RepetitionPenalty = cfg.RepetitionPenalty
	bc := decode.BeamConfig{Beam: cfg.Beam, NBest: n, LengthPenalty: cfg.LengthPenalty, LengthPenaltyStyle: cfg.LengthPenaltyStyle,
		EarlyStopping: cfg.EarlyStopping, MaxNewTokens: maxNew, EOS: cfg.EOS, StopStrings: cfg.StopStrings,
		Decode: func(tokens []int) string {
			s, _ := t.Tokenizer.Decode(tokens)
			return s
		}, Constraints: rules}
	hyps, err := t.Model.beamSearch(ctx, [][]int{ids}, BeamConfig{BeamConfig: bc, NoCache: cfg.NoCache})
	if err != nil {
		return nil, err
	}
	return hyps[0], nil
}

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
)

// stopList is a repeatable string flag: --stop S, once per stop string.
type stopList []string

func (s *stopList) String() string { return strings.Join(*s, ", ") }

func (s *stopList) Set(v string) error {
	if v == "" {
		return fmt.Errorf("a stop string must not be empty")
	}
	*s = append(*s, v)
	return nil
}

// generateLlama is zoo generate for a LLaMA-family checkpoint (llama,
// qwen2, mistral) in dir, through llama.TextGeneration: the checkpoint's
// settings (TextGeneration.Defaults: generation_config.json, its eos
// list) with the flags that are set on top, the prompt tokenized with the
// tokenizer's template (bos first where it adds it), the continuation
// streamed after the prompt as it is decoded (beam search's at its end).
func generateLlama(f *cmdFlags, dir, prompt string, fl generateFlags, seed uint64, stops []string, stdout io.Writer) error {
	set := f.isSet
	switch {
	case set("nbest") && *fl.nbest > 1:
		return fmt.Errorf("%w: --nbest %d: a LLaMA-family checkpoint prints the best continuation only", errUsage, *fl.nbest)
	case set("no-cache"):
		return fmt.Errorf("%w: --no-cache: a LLaMA-family checkpoint always decodes with the KV cache", errUsage)
	case set("max-new-tokens") && (*fl.n < 1 || *fl.n > llama.MaxNewTokensLimit):
		return fmt.Errorf("%w: --max-new-tokens %d must be between 1 and %d (llama.MaxNewTokensLimit)", errUsage, *fl.n, llama.MaxNewTokensLimit)
	}
	p, err := llama.LoadTextGeneration(dir, models.WithWeightFormat(fl.weights))
	if err != nil {
		return err
	}
	cfg := p.Defaults()
	if set("max-new-tokens") {
		cfg.MaxNewTokens, cfg.MaxLength = *fl.n, 0
	}
	if set("temperature") {
		cfg.Temperature = *fl.temp
	}
	if set("top-k") {
		cfg.TopK = *fl.topK
	}
	if set("top-p") {
		cfg.TopP = *fl.topP
	}
	if set("seed") {
		cfg.Seed = seed
	}
	if set("beam") {
		cfg.Beam = *fl.beam
	}
	if set("length-penalty") {
		cfg.LengthPenalty = *fl.alpha
	}
	if set("length-penalty-style") || set("length-penalty") {
		if cfg.LengthPenaltyStyle, err = decode.ParseLengthPenaltyStyle(*fl.style); err != nil {
			return fmt.Errorf("%w: --length-penalty-style: %v", errUsage, err)
		}
	}
	if set("early-stopping") {
		if cfg.EarlyStopping, err = decode.ParseStopping(*fl.stopping); err != nil {
			return fmt.Errorf("%w: --early-stopping: %v", errUsage, err)
		}
	}
	cfg.StopStrings, cfg.NewTextOnly = stops, true
	cfg.OnText = func(_ int, piece string) { fmt.Fprint(stdout, piece) }
	ctx, stop := signalContext()
	defer stop()
	fmt.Fprint(stdout, prompt)
	_, err = p.Generate(ctx, []string{prompt}, cfg)
	fmt.Fprintln(stdout)
	return err
}

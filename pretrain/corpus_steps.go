package pretrain

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/train"
)

// openTextCorpus opens the corpus at path and checks that it is text, and
// that initFrom, if given, is a checkpoint of modelType: the checks the
// recipes' constructors make before anything is written.
func openTextCorpus(ctx context.Context, path, initFrom, modelType string) (*datasets.Corpus, error) {
	corpus, err := datasets.OpenCorpus(path, datasets.CorpusOptions{})
	if err != nil {
		return nil, err
	}
	if err := corpus.CheckText(ctx); err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	if initFrom != "" { // a bad init_from is the first thing to say
		if ckpt, err := models.Open(initFrom); err != nil {
			return nil, fmt.Errorf("pretrain: init_from: %w", err)
		} else if err := ckpt.Expect(modelType); err != nil {
			return nil, fmt.Errorf("pretrain: init_from: %w", err)
		}
	}
	return corpus, nil
}

// tokenizeCorpus tokenizes c with tok, caching the tokens under cacheDir
// (empty: <outputDir>/../cache), and writes to out a note of the corpus's
// unknown tokens.
func tokenizeCorpus(ctx context.Context, c *datasets.Corpus, tok datasets.Tokenizer, cacheDir, outputDir string, out io.Writer) (*datasets.Tokens, error) {
	if cacheDir == "" {
		cacheDir = filepath.Join(filepath.Dir(filepath.Clean(outputDir)), "cache")
	}
	unk := datasets.Unknowns(tok)
	toks, err := datasets.TokenizeContext(ctx, c, tok, cacheDir)
	if err != nil {
		return nil, err
	}
	fmt.Fprint(out, datasets.UnknownNote(datasets.Unknowns(tok)-unk, "the corpus"))
	return toks, nil
}

// checkSplit refuses a split of toks into trainToks and val (at
// valFraction) that leaves either part no more than one block; lower names
// the setting that makes the block smaller.
func checkSplit(toks, trainToks, val *datasets.Tokens, valFraction float64, block int, lower string) error {
	if trainToks.Len() <= block || val.Len() <= block {
		return fmt.Errorf("pretrain: the corpus has %d tokens; split %g/%g it leaves %d for training and %d for validation, and each needs more than one block of %d: use a longer corpus or a smaller %s",
			toks.Len(), 1-valFraction, valFraction, trainToks.Len(), val.Len(), block, lower)
	}
	return nil
}

// evalWindows tokenizes the corpus at path with tok (no cache) and cuts it
// into every non-overlapping window of t tokens, batch windows a batch:
// what EvalGPT and EvalLlama score.
func evalWindows(ctx context.Context, path string, tok datasets.Tokenizer, batch, t int) ([]train.Batch, error) {
	c, err := datasets.OpenCorpus(path, datasets.CorpusOptions{})
	if err != nil {
		return nil, err
	}
	toks, err := datasets.TokenizeContext(ctx, c, tok, "")
	if err != nil {
		return nil, err
	}
	batches, err := Windows(toks, batch, t)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	return batches, nil
}

// checkLMArgs reports the settings of a causal-LM run (GPTConfig,
// LlamaConfig) that cannot run and that Validate checks first: the batch,
// steps and accumulation, the split, the output directory.
func checkLMArgs(a train.Args, valFraction float64) error {
	switch {
	case a.BatchSize <= 0 || a.MaxSteps <= 0 || a.GradientAccumulationSteps <= 0:
		return fmt.Errorf("config: per_device_train_batch_size %d, max_steps %d and gradient_accumulation_steps %d must be positive", a.BatchSize, a.MaxSteps, a.GradientAccumulationSteps)
	case !(valFraction > 0 && valFraction < 1):
		return fmt.Errorf("config: val_fraction %g must be in (0, 1)", valFraction)
	case a.OutputDir == "":
		return fmt.Errorf("config: output_dir is empty")
	}
	return nil
}

// checkLMTail reports the warmup and the samples of a causal-LM run that
// cannot run, which Validate checks after the tokenizer's settings.
func checkLMTail(a train.Args, samples, sampleLen int) error {
	switch {
	case a.WarmupSteps < 0 || a.WarmupSteps >= a.MaxSteps:
		return fmt.Errorf("config: warmup_steps %d must be in [0, max_steps %d): lower --warmup-steps", a.WarmupSteps, a.MaxSteps)
	case samples < 0 || sampleLen < 0:
		return fmt.Errorf("config: samples and sample_tokens must not be negative")
	}
	return nil
}

// readConfigFile reads the JSON config file at path over base with decode
// (DecodeGPTConfig, DecodeLlamaConfig); on an error it returns base.
func readConfigFile[C any](path string, base C, decode func([]byte, C) (C, error)) (C, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return base, fmt.Errorf("config: %w", err)
	}
	cfg, err := decode(b, base)
	if err != nil {
		return base, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

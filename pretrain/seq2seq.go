package pretrain

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/jsonconfig"
	"github.com/d73a19ff/zoo/models/seq2seq"
	"github.com/d73a19ff/zoo/train"
)

// Seq2SeqConfig is the configuration of denoising pretraining of the
// encoder-decoder Transformer (`zoo pretrain seq2seq`), in the style of
// BART (Lewis et al. 2019): the encoder reads a corrupted line and the
// decoder rebuilds the original.
type Seq2SeqConfig struct {
	Corpus string `json:"corpus"` // monolingual text, one example per line: file, directory or glob
	Seq2SeqTrainConfig
	Noise datasets.NoiseConfig `json:"noise"`
}

// DefaultSeq2Seq is BART's noise (30% of tokens masked in Poisson(3.5)
// spans, sentences permuted) and the paper's optimiser on the Small model.
func DefaultSeq2Seq() Seq2SeqConfig {
	c := Seq2SeqConfig{Seq2SeqTrainConfig: DefaultSeq2SeqTrainConfig(),
		Noise: datasets.NoiseConfig{MaskRatio: 0.3, PoissonLambda: 3.5, PermuteSentences: true, MaskID: seq2seq.MaskID}}
	c.OutputDir = filepath.Join("runs", "seq2seq-denoise")
	return c
}

// ReadSeq2SeqConfig reads a JSON config file over base; unknown keys and
// wrong types are errors. The model block is also kept as written, for
// init_from to read over the checkpoint's config (Seq2SeqTrainConfig.ModelJSON).
func ReadSeq2SeqConfig(path string, base Seq2SeqConfig) (Seq2SeqConfig, error) {
	var notes []string
	cfg, err := jsonconfig.Read(path, base, jsonconfig.Renames(train.DeprecatedNames, &notes))
	if err != nil {
		return cfg, err
	}
	cfg.Deprecated = append(cfg.Deprecated, notes...)
	cfg.ModelJSON, err = jsonconfig.Section(path, "model")
	return cfg, err
}

// RunSeq2Seq pretrains a seq2seq model by denoising the corpus's lines.
func RunSeq2Seq(ctx context.Context, cfg Seq2SeqConfig, out io.Writer) (train.Result, error) {
	if cfg.Corpus == "" {
		return train.Result{}, fmt.Errorf("config: corpus is empty: give monolingual text, one example per line")
	}
	if err := cfg.Validate(); err != nil {
		return train.Result{}, err
	}
	if cfg.DistillFrom != "" {
		return train.Result{}, fmt.Errorf("config: distill_from is for translation fine-tuning (zoo finetune seq2seq), not denoising pretraining; remove it")
	}
	c, err := datasets.OpenCorpus(cfg.Corpus, datasets.CorpusOptions{})
	if err == nil {
		if err = c.CheckText(ctx); err != nil {
			err = fmt.Errorf("pretrain: %w", err)
		}
	}
	if err == nil {
		err = train.PrepareRun(cfg.OutputDir, cfg.Resume, cfg.OverwriteOutputDir, out)
	}
	if err != nil {
		return train.Result{}, err
	}
	var lines []string
	if err := c.EachContext(ctx, func(text string) error {
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
		return nil
	}); err != nil {
		return train.Result{}, err
	}
	pairs := make([]datasets.Pair, len(lines))
	for i, l := range lines {
		pairs[i] = datasets.Pair{Src: l, Tgt: l}
	}
	if len(pairs) <= cfg.HeldOut {
		return train.Result{}, fmt.Errorf("pretrain: the corpus has %d lines, not more than held_out %d", len(pairs), cfg.HeldOut)
	}
	held, trainP := pairs[:cfg.HeldOut], pairs[cfg.HeldOut:]
	m, tok, err := SetupSeq2SeqContext(ctx, cfg.Seq2SeqTrainConfig, func() []string { return lines[cfg.HeldOut:] }, out)
	if err != nil {
		return train.Result{}, fmt.Errorf("pretrain: %w", err)
	}
	noise := cfg.Noise
	noise.MaskID = seq2seq.MaskID
	for _, p := range []string{".", "!", "?"} {
		if ids, err := tok.Encode(p); err == nil && len(ids) == 1 {
			noise.EndOfSentence = append(noise.EndOfSentence, ids[0])
		}
	}
	if err := noise.Validate(); err != nil {
		return train.Result{}, fmt.Errorf("config: noise: %w", err)
	}
	trainEx, rep, err := seq2seq.Encode(tok, trainP, m.Config.MaxLen, cfg.Overlong)
	if err != nil {
		return train.Result{}, err
	}
	heldEx, _, err := seq2seq.Encode(tok, held, m.Config.MaxLen, seq2seq.Truncate)
	if err != nil {
		return train.Result{}, err
	}
	fmt.Fprintf(out, "%d lines; training: %s\n", len(lines), rep)
	if err := CheckSeq2SeqMemory(m.Config, cfg.BatchSize, trainEx, heldEx); err != nil {
		return train.Result{}, err
	}
	corrupt := func(ex seq2seq.Example, rng *rand.Rand) (seq2seq.Example, error) {
		src, err := datasets.Noise(ex.Tgt, noise, rng)
		if len(src) == 0 {
			src = []int{seq2seq.MaskID}
		}
		return seq2seq.Example{Src: src, Tgt: ex.Tgt}, err
	}
	data, err := NewSeq2SeqData(m.Config, trainEx, heldEx, cfg.BatchSize, cfg.Seed, corrupt)
	if err != nil {
		return train.Result{}, fmt.Errorf("pretrain: %w", err)
	}
	return TrainSeq2Seq(ctx, cfg.Seq2SeqTrainConfig, m, tok, data, train.Scoring{}, out)
}

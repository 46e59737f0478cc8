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
	cfg, err := train.ReadConfig(path, base, func(c *Seq2SeqConfig) *train.Args { return &c.Args }, "", nil)
	if err != nil {
		return cfg, err
	}
	cfg.ModelJSON, err = jsonconfig.Section(path, "model")
	return cfg, err
}

// RunSeq2Seq pretrains a seq2seq model by denoising the corpus's lines,
// writing checkpoints, metrics.jsonl and loss.png under cfg.OutputDir and
// the progress to out. It is train.Run with the denoising recipe
// (DenoiseRecipe).
func RunSeq2Seq(ctx context.Context, cfg Seq2SeqConfig, out io.Writer) (train.Result, error) {
	r, err := NewDenoiseRecipe(ctx, cfg)
	if err != nil {
		return train.Result{}, err
	}
	return train.Run(ctx, r.Args(), r, out)
}

// DenoiseRecipe is denoising pretraining of the seq2seq Transformer as a
// train.Recipe: the corpus's lines, the first held_out of them validating,
// each training line's source corrupted anew at every epoch (cfg.Noise)
// and its target the line. The rest is Seq2SeqRecipe's. Use it with
// train.Run and its Args, or RunSeq2Seq.
type DenoiseRecipe struct {
	Seq2SeqRecipe
	cfg    Seq2SeqConfig
	corpus *datasets.Corpus
	lines  []string
}

// NewDenoiseRecipe checks cfg, opens its corpus and checks that it is
// text: the errors a user should see before anything is written.
func NewDenoiseRecipe(ctx context.Context, cfg Seq2SeqConfig) (*DenoiseRecipe, error) {
	if cfg.Corpus == "" {
		return nil, fmt.Errorf("config: corpus is empty: give monolingual text, one example per line")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := datasets.OpenCorpus(cfg.Corpus, datasets.CorpusOptions{})
	if err != nil {
		return nil, err
	}
	if err := c.CheckText(ctx); err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	return &DenoiseRecipe{Seq2SeqRecipe: Seq2SeqRecipe{Config: cfg.Seq2SeqTrainConfig}, cfg: cfg, corpus: c}, nil
}

// Record reads the corpus's lines (ctx stops it) and records the training
// lines' hash, the tokenizer settings and the model config.
func (r *DenoiseRecipe) Record(ctx context.Context) (train.Record, error) {
	if r.lines == nil {
		var lines []string
		if err := r.corpus.EachContext(ctx, func(text string) error {
			for _, l := range strings.Split(text, "\n") {
				if l = strings.TrimSpace(l); l != "" {
					lines = append(lines, l)
				}
			}
			return nil
		}); err != nil {
			return nil, err
		}
		if len(lines) <= r.cfg.HeldOut {
			return nil, fmt.Errorf("pretrain: the corpus has %d lines, not more than held_out %d", len(lines), r.cfg.HeldOut)
		}
		r.lines, r.Texts = lines, lines[r.cfg.HeldOut:]
	}
	return r.Seq2SeqRecipe.Record(ctx)
}

// Setup loads or builds the model and tokenizer (Seq2SeqRecipe.SetupModel),
// encodes the lines and sets up the noise, whose sentence ends are the
// tokenizer's ".", "!" and "?"; it returns a step's activation memory.
func (r *DenoiseRecipe) Setup(ctx context.Context, resume string, out io.Writer) (train.MemoryNeed, error) {
	if err := r.SetupModel(ctx, resume, out); err != nil {
		return train.MemoryNeed{}, fmt.Errorf("pretrain: %w", err)
	}
	pairs := make([]datasets.Pair, len(r.lines))
	for i, l := range r.lines {
		pairs[i] = datasets.Pair{Src: l, Tgt: l}
	}
	held, trainP := pairs[:r.cfg.HeldOut], pairs[r.cfg.HeldOut:]
	noise := r.cfg.Noise
	noise.MaskID = seq2seq.MaskID
	for _, p := range []string{".", "!", "?"} {
		if ids, err := r.Tok.Encode(p); err == nil && len(ids) == 1 {
			noise.EndOfSentence = append(noise.EndOfSentence, ids[0])
		}
	}
	if err := noise.Validate(); err != nil {
		return train.MemoryNeed{}, fmt.Errorf("config: noise: %w", err)
	}
	var rep seq2seq.EncodeReport
	var err error
	if r.Train, rep, err = seq2seq.Encode(r.Tok, trainP, r.Model.Config.MaxLen, r.cfg.Overlong); err != nil {
		return train.MemoryNeed{}, err
	}
	if r.Held, _, err = seq2seq.Encode(r.Tok, held, r.Model.Config.MaxLen, seq2seq.Truncate); err != nil {
		return train.MemoryNeed{}, err
	}
	fmt.Fprintf(out, "%d lines; training: %s\n", len(r.lines), rep)
	r.Corrupt = func(ex seq2seq.Example, rng *rand.Rand) (seq2seq.Example, error) {
		src, err := datasets.Noise(ex.Tgt, noise, rng)
		if len(src) == 0 {
			src = []int{seq2seq.MaskID}
		}
		return seq2seq.Example{Src: src, Tgt: ex.Tgt}, err
	}
	return r.MemoryNeed(), nil
}

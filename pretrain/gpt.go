package pretrain

import (
	"context"
	"fmt"
	"io"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/train"
)

// Result is what a pretraining run produced.
type Result struct {
	train.Result
	Samples []string
}

// RunGPT pretrains a GPT as cfg says, writing checkpoints, metrics.jsonl and
// loss.png under cfg.OutputDir and the progress to out. It is train.Run
// with the GPT recipe (GPTRecipe).
//
// A new run records its corpus (size and content hash), tokenizer settings
// and model config in run.json. A resume (cfg.Resume) uses the latest
// checkpoint's tokenizer and model config, and refuses, naming each
// difference, when the corpus or settings given now differ from run.json's,
// unless cfg.Force. An interrupt (ctx) while the tokenizer is trained or
// the corpus read and tokenized ends the run promptly with an error
// wrapping context.Canceled, before a model is built.
func RunGPT(ctx context.Context, cfg GPTConfig, out io.Writer) (*Result, error) {
	r, err := NewGPTRecipe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res, err := train.Run(ctx, r.cfg.Args, r, out)
	if err != nil {
		return nil, err
	}
	return &Result{Result: res, Samples: r.Samples}, nil
}

// GPTRecipe is GPT pretraining (or, with init_from, LM fine-tuning) as a
// train.Recipe: the corpus, its tokenizer, a GPT, the causal-LM task and
// its batches, and samples at the end. Use it with train.Run, or RunGPT.
type GPTRecipe struct {
	cfg    GPTConfig
	corpus *datasets.Corpus
	tok    datasets.Tokenizer
	m      *gpt.Model
	// train and val are the corpus's token splits, set by Setup.
	train, val *datasets.Tokens
	// Samples are the texts generated once training ended (cfg.Samples
	// of them; none on data-parallel ranks other than 0).
	Samples []string
}

// NewGPTRecipe checks cfg, opens its corpus (Opticks when empty) and checks
// that it is text, and that init_from, if given, is a GPT checkpoint: the
// errors a user should see before anything is written.
func NewGPTRecipe(ctx context.Context, cfg GPTConfig) (*GPTRecipe, error) {
	if cfg.Corpus == "" {
		cfg.Corpus = OpticksPath()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	corpus, err := openTextCorpus(ctx, cfg.Corpus, cfg.InitFrom, "gpt")
	if err != nil {
		return nil, err
	}
	return &GPTRecipe{cfg: cfg, corpus: corpus}, nil
}

// Record is what run.json records: the corpus's size and hash, the
// tokenizer settings and the model config as given.
func (r *GPTRecipe) Record(ctx context.Context) (train.Record, error) {
	return gptRecord(ctx, r.cfg, r.corpus)
}

// LegacyRecord is the model config of checkpoint, for a run from before
// run.json.
func (r *GPTRecipe) LegacyRecord(checkpoint string) (train.Record, error) {
	m, _, err := gpt.Load(checkpoint)
	if err != nil {
		return nil, fmt.Errorf("pretrain: resume: %w", err)
	}
	run := train.Record{}
	if err := run.SetFields("model.", m.Config, "vocab_size"); err != nil {
		return nil, err
	}
	return run, nil
}

// Setup chooses the tokenizer (the checkpoint's on a resume or with
// init_from, else trained on or read for the corpus), tokenizes and
// splits the corpus, and returns the step's activation memory.
func (r *GPTRecipe) Setup(ctx context.Context, resume string, out io.Writer) (train.MemoryNeed, error) {
	cfg := &r.cfg
	var err error
	switch {
	case resume != "": // the run's tokenizer and model config, whatever the corpus would give now
		if r.tok, err = models.LoadTokenizer(resume); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: resume: %w", err)
		}
		if r.m, _, err = gpt.Load(resume); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: resume: %w", err)
		}
		cfg.Model = r.m.Config
	case cfg.InitFrom != "": // fine-tuning: the checkpoint's model, config and tokenizer
		if r.tok, err = models.LoadTokenizer(cfg.InitFrom); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: init_from: %w", err)
		}
		if r.m, err = initFromModel(cfg.InitFrom, cfg.Model, cfg.ModelJSON, out); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: init_from: %w", err)
		}
		fmt.Fprint(out, modelNotice(cfg.Model, r.m.Config, cfg.ModelJSON))
		cfg.Model = r.m.Config
	case cfg.Tokenizer == "bpe": // the slow choice, which an interrupt must stop
		if r.tok, err = datasets.TrainBPEContext(ctx, r.corpus, cfg.BPEVocab, nil); err != nil {
			return train.MemoryNeed{}, err
		}
	default:
		if r.tok, err = chooseTokenizer(ctx, *cfg, r.corpus); err != nil {
			return train.MemoryNeed{}, err
		}
	}
	toks, err := tokenizeCorpus(ctx, r.corpus, r.tok, cfg.CacheDir, cfg.OutputDir, out)
	if err != nil {
		return train.MemoryNeed{}, err
	}
	block := cfg.Model.NPositions
	if r.train, r.val, err = toks.Split(cfg.ValFraction); err != nil {
		return train.MemoryNeed{}, err
	}
	if err := checkSplit(toks, r.train, r.val, cfg.ValFraction, block, "model.n_positions"); err != nil {
		return train.MemoryNeed{}, err
	}
	return memoryNeed(*cfg), nil
}

// Build makes the model (unless Setup loaded one), the causal-LM task and
// the batches.
func (r *GPTRecipe) Build(context.Context) (train.Plan, error) {
	cfg := r.cfg
	mc := cfg.Model
	var err error
	if r.m == nil {
		mc.VocabSize = r.tok.VocabSize()
		if r.m, err = gpt.New(mc, layers.WithSeed(cfg.Seed)); err != nil {
			return train.Plan{}, err
		}
	} else if r.m.Config.VocabSize != r.tok.VocabSize() {
		return train.Plan{}, fmt.Errorf("pretrain: the checkpoint's tokenizer has %d tokens, its model %d", r.tok.VocabSize(), r.m.Config.VocabSize)
	}
	block := mc.NPositions
	data, err := NewLMData(r.train, r.val, cfg.BatchSize, block, cfg.Seed)
	if err != nil {
		return train.Plan{}, fmt.Errorf("pretrain: %w", err)
	}
	return train.Plan{
		Task: &LMTask{Model: r.m, Tok: r.tok, B: cfg.BatchSize, T: block}, Data: data, DefaultSchedule: "cosine",
		Summary: fmt.Sprintf("gpt: %d parameters, %d layers, %d heads, %d wide, block %d; %d training and %d validation tokens (vocabulary %d)",
			r.m.NumParams(), mc.NLayer, mc.NHead, mc.NEmbd, block, r.train.Len(), r.val.Len(), r.tok.VocabSize()),
	}, nil
}

// Finish generates the samples (cfg.Samples).
func (r *GPTRecipe) Finish(_ context.Context, _ *train.Trainer, _ train.Result, _ io.Writer) error {
	var err error
	r.Samples, err = samples(r.m, r.tok, r.cfg)
	return err
}

// samples generates cfg.Samples texts from a newline, sampling at
// temperature 0.8. Data-parallel ranks other than 0, which print nothing,
// generate none.
func samples(m *gpt.Model, tok datasets.Tokenizer, cfg GPTConfig) ([]string, error) {
	if cfg.Samples == 0 || cfg.SampleLen == 0 || !train.Leader() {
		return nil, nil
	}
	prompt, err := tok.Encode("\n")
	if err != nil || len(prompt) == 0 {
		prompt = []int{0}
	}
	var out []string
	for i := 0; i < cfg.Samples; i++ {
		gen, err := m.Generate([][]int{prompt}, gpt.Sampling(cfg.SampleLen, 0.8, cfg.Seed+uint64(i)))
		if err != nil {
			return nil, err
		}
		text, err := tok.Decode(gen[0])
		if err != nil {
			return nil, err
		}
		out = append(out, text)
	}
	return out, nil
}

// memoryNeed is a training step's activation memory.
func memoryNeed(cfg GPTConfig) train.MemoryNeed {
	return train.MemoryNeed{Bytes: cfg.Model.ActivationBytes(cfg.BatchSize, cfg.Model.NPositions, true, true), What: fmt.Sprintf("pretrain: batch_size %d × block %d (n_positions) for activations", cfg.BatchSize, cfg.Model.NPositions),
		Lower: "lower batch_size (use gradient_accumulation_steps to keep the tokens per step) or model.n_positions"}
}

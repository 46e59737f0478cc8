package pretrain

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/runinfo"
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
// loss.png under cfg.RunDir and the progress to out.
//
// A new run records its corpus (size and content hash), tokenizer settings
// and model config in run_dir/run.json. A resume (cfg.Resume) uses the
// latest checkpoint's tokenizer and model config, and refuses, naming each
// difference, when the corpus or settings given now differ from run.json's,
// unless cfg.Force. An interrupt (ctx) while the tokenizer is trained or
// the corpus read and tokenized ends the run promptly with an error
// wrapping context.Canceled, before a model is built.
func RunGPT(ctx context.Context, cfg GPTConfig, out io.Writer) (*Result, error) {
	if cfg.Corpus == "" {
		cfg.Corpus = OpticksPath()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	corpus, err := datasets.OpenCorpus(cfg.Corpus, datasets.CorpusOptions{})
	if err != nil {
		return nil, err
	}
	if err := corpus.CheckText(ctx); err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	if cfg.InitFrom != "" { // a bad init_from is the first thing to say
		if ckpt, err := models.Open(cfg.InitFrom); err != nil {
			return nil, fmt.Errorf("pretrain: init_from: %w", err)
		} else if err := ckpt.Expect("gpt"); err != nil {
			return nil, fmt.Errorf("pretrain: init_from: %w", err)
		}
	}
	if err := train.PrepareRun(cfg.RunDir, cfg.Resume, cfg.Overwrite, out); err != nil {
		return nil, err
	}
	var tok datasets.Tokenizer
	var m *gpt.Model
	var now runinfo.Record // what this run is given, for run.json
	if now, err = gptRecord(ctx, cfg, corpus); err != nil {
		return nil, err
	}
	switch {
	case cfg.Resume: // the run's tokenizer and model config, whatever the corpus would give now
		ckpt, err := train.Latest(cfg.RunDir)
		if err != nil {
			return nil, err
		}
		if tok, err = models.LoadTokenizer(ckpt); err != nil {
			return nil, fmt.Errorf("pretrain: resume: %w", err)
		}
		if m, _, err = gpt.Load(ckpt); err != nil {
			return nil, fmt.Errorf("pretrain: resume: %w", err)
		}
		if err := checkResume(cfg, m.Config, now, out); err != nil {
			return nil, err
		}
		cfg.Model = m.Config
	case cfg.InitFrom != "": // fine-tuning: the checkpoint's model, config and tokenizer
		if tok, err = models.LoadTokenizer(cfg.InitFrom); err != nil {
			return nil, fmt.Errorf("pretrain: init_from: %w", err)
		}
		if m, err = initFromModel(cfg.InitFrom, cfg.Model, cfg.ModelJSON, out); err != nil {
			return nil, fmt.Errorf("pretrain: init_from: %w", err)
		}
		fmt.Fprint(out, modelNotice(cfg.Model, m.Config, cfg.ModelJSON))
		cfg.Model = m.Config
	case cfg.Tokenizer == "bpe": // the slow choice, which an interrupt must stop
		if tok, err = datasets.TrainBPEContext(ctx, corpus, cfg.BPEVocab, nil); err != nil {
			return nil, err
		}
	default:
		if tok, err = chooseTokenizer(ctx, cfg, corpus); err != nil {
			return nil, err
		}
	}
	cache := cfg.CacheDir
	if cache == "" {
		cache = filepath.Join(filepath.Dir(filepath.Clean(cfg.RunDir)), "cache")
	}
	unk := datasets.Unknowns(tok)
	toks, err := datasets.TokenizeContext(ctx, corpus, tok, cache)
	if err != nil {
		return nil, err
	}
	fmt.Fprint(out, datasets.UnknownNote(datasets.Unknowns(tok)-unk, "the corpus"))
	block := cfg.Model.NPositions
	trainTok, valTok, err := toks.Split(cfg.ValFraction)
	if err != nil {
		return nil, err
	}
	if trainTok.Len() <= block || valTok.Len() <= block {
		return nil, fmt.Errorf("pretrain: the corpus has %d tokens; split %g/%g it leaves %d for training and %d for validation, and each needs more than one block of %d: use a longer corpus or a smaller model.n_positions",
			toks.Len(), 1-cfg.ValFraction, cfg.ValFraction, trainTok.Len(), valTok.Len(), block)
	}
	if err := checkMemory(cfg); err != nil {
		return nil, err
	}
	mc := cfg.Model
	if m == nil {
		mc.VocabSize = tok.VocabSize()
		if m, err = gpt.New(mc, layers.WithSeed(cfg.Seed)); err != nil {
			return nil, err
		}
	} else if m.Config.VocabSize != tok.VocabSize() {
		return nil, fmt.Errorf("pretrain: the checkpoint's tokenizer has %d tokens, its model %d", tok.VocabSize(), m.Config.VocabSize)
	}
	data, err := NewLMData(trainTok, valTok, cfg.Batch, block, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	sched, err := train.WarmupCosine(cfg.LR, cfg.MinLR, cfg.Warmup, cfg.MaxIters)
	if err != nil {
		return nil, err
	}
	ac := train.DefaultAdamWConfig()
	ac.Beta1, ac.Beta2, ac.WeightDecay = cfg.Beta1, cfg.Beta2, cfg.WeightDecay
	if err := ctx.Err(); err != nil { // interrupted while preparing: no model, no step-0 checkpoint
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	tr, err := train.New(&LMTask{Model: m, Tok: tok, B: cfg.Batch, T: block}, data, train.Config{
		Steps: cfg.MaxIters, Accumulate: cfg.Accumulate, ClipNorm: cfg.GradClip, EvalEvery: cfg.EvalEvery,
		SaveEvery: cfg.SaveEvery, Dir: cfg.RunDir, Seed: cfg.Seed, AdamW: ac, Schedule: sched, LoadBestAtEnd: cfg.LoadBestModelAtEnd,
	})
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	if err := resumeRun(tr, cfg.RunDir, cfg.Resume, now, out); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "gpt: %d parameters, %d layers, %d heads, %d wide, block %d; %d training and %d validation tokens (vocabulary %d)\n",
		m.NumParams(), mc.NLayer, mc.NHead, mc.NEmbd, block, trainTok.Len(), valTok.Len(), tok.VocabSize())
	res, err := tr.Run(ctx, out)
	if err != nil {
		return nil, err
	}
	r := &Result{Result: res}
	if r.Samples, err = samples(m, tok, cfg); err != nil {
		return nil, err
	}
	return r, nil
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

// checkMemory refuses a batch whose training step would not fit in the
// machine's available memory, saying what to lower.
func checkMemory(cfg GPTConfig) error {
	need := cfg.Model.ActivationBytes(cfg.Batch, cfg.Model.NPositions, true, true)
	return models.CheckMemory(need, fmt.Sprintf("pretrain: batch_size %d × block %d (n_positions) for activations", cfg.Batch, cfg.Model.NPositions),
		"lower batch_size (use gradient_accumulation_steps to keep the tokens per step) or model.n_positions")
}

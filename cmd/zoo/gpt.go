package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"path/filepath"

	"github.com/d73a19ff/zoo/finetune"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/pretrain"
	"github.com/d73a19ff/zoo/train"
)

// gptFlags binds the flags of GPT causal-LM training to cfg.
func gptFlags(f *cmdFlags, cfg *pretrain.GPTConfig) {
	f.training(trainTargets{run: &cfg.RunDir, initFrom: &cfg.InitFrom, steps: &cfg.MaxIters, batch: &cfg.Batch,
		warmup: &cfg.Warmup, evalEvery: &cfg.EvalEvery, saveEvery: &cfg.SaveEvery, lr: &cfg.LR, seed: &cfg.Seed, resume: &cfg.Resume, force: &cfg.Force, overwrite: &cfg.Overwrite, loadBest: &cfg.LoadBestModelAtEnd,
		batchWhat: "sequences", warmupWhat: "before the cosine decay", initWhat: "a GPT (model, config and tokenizer): LM fine-tuning"})
	f.StringVar(&cfg.Corpus, "corpus", cfg.Corpus, "corpus file, directory or glob (default: Newton's Opticks from the Go toolchain)")
	f.StringVar(&cfg.Tokenizer, "tokenizer", cfg.Tokenizer, "char, bpe, or the path of a tokenizer.json")
}

// runPretrainGPT is `zoo pretrain gpt [flags]`.
func runPretrainGPT(args []string, stdout io.Writer) error {
	cfg, err := readConfig(args, pretrain.DefaultGPT(), pretrain.ReadGPTConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo pretrain gpt", "usage: zoo pretrain gpt [flags]\n\nPretrains a GPT (causal LM). With no flags: nanoGPT's CPU configuration, character level, on Newton's Opticks.")
	gptFlags(f, &cfg)
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	cfg.Warmup = f.warmup(cfg.Warmup, cfg.MaxIters)
	ctx, stop := signalContext()
	defer stop()
	res, err := pretrain.RunGPT(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.RunDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps, training loss %.4f, validation loss %.4f (best %.4f)\n", res.Steps, res.Loss, res.ValLoss, res.BestLoss)
	fmt.Fprintf(stdout, "%s\nloss curve: %s\n", checkpointLine(res.Final, res.Best, res.BestStep), filepath.Join(cfg.RunDir, train.PlotFile))
	for i, s := range res.Samples {
		fmt.Fprintf(stdout, "\n--- sample %d ---\n%s\n", i+1, s)
	}
	fmt.Fprintf(stdout, "\ncontinue with:\n  go run ./cmd/zoo generate --checkpoint %s --prompt \"Light\"\n", cmp.Or(res.Best, res.Final))
	return nil
}

// runFinetuneGPT is `zoo finetune gpt --task lm|classify --init-from DIR …`.
func runFinetuneGPT(args []string, stdout io.Writer) error {
	task := preScan(args, "task")
	switch task {
	case "", "lm":
		return runFinetuneLM(args, stdout)
	case "classify":
		return runClassify("gpt", args, stdout)
	}
	return fmt.Errorf("%w: --task %q: use lm or classify", errUsage, task)
}

// runFinetuneLM continues causal-LM training of a checkpoint on new text.
func runFinetuneLM(args []string, stdout io.Writer) error {
	base := pretrain.DefaultGPT()
	base.RunDir = filepath.Join("runs", "gpt-finetune")
	cfg, err := readConfig(args, base, pretrain.ReadGPTConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo finetune gpt", "usage: zoo finetune gpt --task lm --init-from DIR --corpus TEXT [flags]\n\nContinues causal-LM training of a GPT checkpoint on new text.")
	f.String("task", "lm", "lm (continue causal-LM training on new text) or classify (sequence classification)")
	gptFlags(f, &cfg)
	f.alias("checkpoint", "init-from")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if cfg.InitFrom == "" {
		return fmt.Errorf("%w: --init-from is required: the GPT checkpoint to fine-tune", errUsage)
	}
	cfg.Warmup = f.warmup(cfg.Warmup, cfg.MaxIters)
	ctx, stop := signalContext()
	defer stop()
	res, err := pretrain.RunGPT(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.RunDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps, validation loss %.4f\n%s\n", res.Steps, res.ValLoss, checkpointLine(res.Final, res.Best, res.BestStep))
	return nil
}

// runClassify is `zoo finetune FAMILY --task classify --init-from DIR
// --train-file FILE …`: the shared classification pipeline, for every
// family with a classifier.
func runClassify(family string, args []string, stdout io.Writer) error {
	cfg, err := readConfig(args, finetune.DefaultClassify(), finetune.ReadClassifyConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo finetune "+family, "usage: zoo finetune "+family+" --task classify --init-from DIR --train-file FILE [flags]\n\nPuts a classification head on the checkpoint and fine-tunes it on labelled texts; reports accuracy, macro-F1 and the confusion matrix.")
	f.String("task", "classify", finetuneTasks(family))
	f.taskFlags(&cfg.Training, &cfg.Checkpoint, &cfg.TrainFile, &cfg.ValFile, "texts", "the checkpoint to put the classifier on", "CSV, TSV or JSONL with text and label columns")
	f.StringVar(&cfg.TextColumn, "text-column", cfg.TextColumn, "column (JSONL key) of the text (default text)")
	f.StringVar(&cfg.LabelColumn, "label-column", cfg.LabelColumn, "column (JSONL key) of the label (default label)")
	f.StringVar(&cfg.TextPairColumn, "text-pair-column", cfg.TextPairColumn, "column (JSONL key) of a pair's second text, e.g. sentence2 (default none: single texts)")
	f.IntVar(&cfg.MaxLength, "max-length", cfg.MaxLength, "tokens per example, special tokens included (0: the most the model reads)")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if err := f.taskReady(&cfg.Training, cfg.Checkpoint, cfg.TrainFile, family, "CSV, TSV or JSONL"); err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	res, err := finetune.RunClassify(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.RunDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps; validation accuracy %.4f, macro-F1 %.4f\n%v\n%s\n",
		res.Steps, res.Confusion.Accuracy(), res.Confusion.MacroF1(), res.Confusion, checkpointLine(res.Final, res.Best, res.BestStep))
	return nil
}

// expectFamily checks that dir is a checkpoint of the named family.
func expectFamily(dir, family string) error {
	ckpt, err := models.Open(dir)
	if err != nil {
		return err
	}
	return ckpt.Expect(family)
}

// runEvalGPT is `zoo eval --checkpoint DIR (--corpus TEXT | --labelled FILE)`
// for a GPT checkpoint.
func runEvalGPT(args []string, stdout io.Writer) error {
	f := newFlags("zoo eval", "usage: zoo eval --checkpoint DIR (--corpus TEXT | --labelled FILE)\n\nScores a GPT: loss and perplexity on text, or a classifier's accuracy and macro-F1 on labelled texts.")
	ckpt := f.String("checkpoint", "", "checkpoint directory (with tokenizer.json)")
	corpus := f.String("corpus", "", "text to score a language model on: loss and perplexity")
	labelled := f.String("labelled", "", "CSV, TSV or JSONL to score a classifier on: accuracy and macro-F1")
	batch := f.Int("batch-size", 12, "windows or texts per batch")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	switch {
	case *ckpt == "" || (*corpus == "") == (*labelled == ""):
		return fmt.Errorf("%w: give --checkpoint and one of --corpus or --labelled", errUsage)
	case *corpus != "":
		if err := noteCorpusUnknowns(stdout, *ckpt, *corpus); err != nil {
			return err
		}
		loss, n, err := pretrain.EvalGPT(*ckpt, *corpus, *batch)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "loss %.4f, perplexity %.3f over %d tokens\n", loss, math.Exp(loss), n)
	default:
		conf, err := evalClassify(stdout, *ckpt, *labelled, *batch)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "accuracy %.4f, macro-F1 %.4f\n%v\n", conf.Accuracy(), conf.MacroF1(), conf)
	}
	return nil
}

// runGenerate is `zoo generate --checkpoint DIR --prompt TEXT [flags]`,
// streaming the continuation as it is produced.
func runGenerate(args []string, stdout io.Writer) error {
	f := newFlags("zoo generate", "usage: zoo generate --checkpoint DIR [--prompt TEXT] [flags]")
	ckpt := f.String("checkpoint", "", "checkpoint directory (config.json, model.safetensors, tokenizer.json)")
	prompt := f.String("prompt", "\n", "text to continue")
	n := f.Int("max-new-tokens", 200, "tokens to generate")
	temp := f.Float64("temperature", 0.8, "sampling temperature; 0 is greedy")
	topK := f.Int("top-k", 0, "sample among the k most likely tokens; 0 keeps all")
	topP := f.Float64("top-p", 1, "nucleus sampling mass in (0, 1]")
	seed := f.Uint64("seed", 1, "sampling seed")
	noCache := f.Bool("no-cache", false, "recompute the context every step instead of using the KV cache")
	beam := f.Int("beam", 1, "beam search with this many beams instead of sampling (deterministic)")
	nbest := f.Int("nbest", 1, "with --beam: print the n best continuations, with their scores")
	alpha := f.Float64("length-penalty", 0, "with --beam: GNMT length penalty α (0 ranks by log-probability)")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if *beam < 1 || *nbest < 1 || *nbest > *beam {
		return fmt.Errorf("%w: --beam %d and --nbest %d: need 1 ≤ nbest ≤ beam", errUsage, *beam, *nbest)
	}
	if *ckpt == "" {
		return fmt.Errorf("%w: --checkpoint is required", errUsage)
	}
	if err := expectFamily(*ckpt, "gpt"); err != nil {
		return err
	}
	m, err := gpt.Load(*ckpt)
	if err != nil {
		return err
	}
	tok, err := models.LoadTokenizer(*ckpt)
	if err != nil {
		return err
	}
	if err := gpt.CheckTokenizer(m, tok); err != nil {
		return fmt.Errorf("%s: %w", *ckpt, err)
	}
	unk := unknowns(tok)
	ids, err := tok.Encode(*prompt)
	if err != nil {
		return fmt.Errorf("prompt: %w", err)
	}
	noteUnknowns(stderr, tok, unk, "the prompt")
	if *beam > 1 {
		hyps, err := m.BeamSearch([][]int{ids}, gpt.BeamConfig{Beam: *beam, NBest: *nbest, LengthPenalty: *alpha,
			MaxNewTokens: *n, NoCache: *noCache})
		if err != nil {
			return err
		}
		for _, h := range hyps[0] {
			text, err := tok.Decode(h.Tokens)
			if err != nil {
				return err
			}
			if *nbest > 1 {
				fmt.Fprintf(stdout, "%.4f\t", h.Score)
			}
			fmt.Fprintf(stdout, "%s%s\n", *prompt, text)
		}
		return nil
	}
	cfg := gpt.GenerateConfig{MaxNewTokens: *n, Temperature: *temp, TopK: *topK, TopP: *topP, Seed: *seed, NoCache: *noCache}
	var out []int
	printed := ""
	var decodeErr error // the first; OnToken cannot stop generation, so it is returned after
	cfg.OnToken = func(_, token int) {
		out = append(out, token)
		if decodeErr != nil {
			return
		}
		text, err := tok.Decode(out)
		if err != nil {
			decodeErr = fmt.Errorf("decode generated token %d (id %d): %w", len(out), token, err)
			return
		}
		if len(text) > len(printed) {
			fmt.Fprint(stdout, text[len(printed):])
			printed = text
		}
	}
	fmt.Fprint(stdout, *prompt)
	if _, err := m.Generate([][]int{ids}, cfg); err != nil {
		return err
	}
	if decodeErr != nil {
		fmt.Fprintln(stdout)
		return decodeErr
	}
	fmt.Fprintln(stdout)
	return nil
}

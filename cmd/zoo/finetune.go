package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/d73a19ff/zoo/finetune"
	"github.com/d73a19ff/zoo/pretrain"
	"github.com/d73a19ff/zoo/train"
)

// runFinetune is `zoo finetune gpt --task lm|classify --checkpoint DIR …`.
func runFinetune(args []string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "seq2seq" {
		return runFinetuneSeq2Seq(args[1:], stdout)
	}
	if len(args) == 0 || args[0] != "gpt" {
		return fmt.Errorf("%w: finetune needs a model family: gpt or seq2seq", errUsage)
	}
	fs := flag.NewFlagSet("zoo finetune gpt", flag.ContinueOnError)
	task := fs.String("task", "lm", "lm (continue causal-LM training on new text) or classify (sequence classification)")
	ckpt := fs.String("checkpoint", "", "the GPT checkpoint to start from")
	corpus := fs.String("corpus", "", "with --task lm: the new text")
	trainFile := fs.String("train-file", "", "with --task classify: CSV, TSV or JSONL with text and label columns")
	valFile := fs.String("validation-file", "", "with --task classify: optional validation file")
	run := fs.String("run", "", "run directory")
	steps := fs.Int("max-iters", 0, "optimizer steps")
	cfgPath := fs.String("config", "", "JSON config file (pretrain.GPTConfig for lm, finetune.ClassifyConfig for classify); flags override it")
	if help, err := parse(fs, args[1:], stdout, "usage: zoo finetune gpt --task lm|classify --checkpoint DIR [flags]"); help || err != nil {
		return err
	}
	if *ckpt == "" {
		return fmt.Errorf("%w: --checkpoint is required", errUsage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch *task {
	case "lm":
		cfg := pretrain.DefaultGPT()
		cfg.RunDir = "runs/gpt-finetune"
		if *cfgPath != "" {
			var err error
			if cfg, err = pretrain.ReadGPTConfig(*cfgPath, cfg); err != nil {
				return err
			}
		}
		cfg.InitFrom = *ckpt
		if *corpus != "" {
			cfg.Corpus = *corpus
		}
		if *run != "" {
			cfg.RunDir = *run
		}
		if *steps > 0 {
			cfg.MaxIters, cfg.Warmup = *steps, min(cfg.Warmup, *steps/10)
		}
		res, err := pretrain.RunGPT(ctx, cfg, stdout)
		if err != nil {
			return interrupted(err, cfg.RunDir, stdout)
		}
		fmt.Fprintf(stdout, "\ndone: %d steps, validation loss %.4f\ncheckpoint: %s\n", res.Steps, res.ValLoss, res.Final)
	case "classify":
		cfg := finetune.DefaultClassify()
		if *cfgPath != "" {
			var err error
			if cfg, err = finetune.ReadClassifyConfig(*cfgPath, cfg); err != nil {
				return err
			}
		}
		cfg.Checkpoint = *ckpt
		if *trainFile != "" {
			cfg.TrainFile = *trainFile
		}
		if *valFile != "" {
			cfg.ValFile = *valFile
		}
		if *run != "" {
			cfg.RunDir = *run
		}
		if *steps > 0 {
			cfg.MaxIters, cfg.Warmup = *steps, min(cfg.Warmup, *steps/10)
		}
		res, err := finetune.RunClassify(ctx, cfg, stdout)
		if err != nil {
			return interrupted(err, cfg.RunDir, stdout)
		}
		fmt.Fprintf(stdout, "\ndone: %d steps; validation accuracy %.4f, macro-F1 %.4f\n%v\ncheckpoint: %s\n",
			res.Steps, res.Confusion.Accuracy(), res.Confusion.MacroF1(), res.Confusion, res.Final)
	default:
		return fmt.Errorf("%w: --task %q: use lm or classify", errUsage, *task)
	}
	return nil
}

// interrupted tells how to resume after Ctrl-C; other errors pass through.
func interrupted(err error, run string, w io.Writer) error {
	if errors.Is(err, train.ErrInterrupted) {
		latest, _ := train.Latest(run)
		fmt.Fprintf(w, "\ninterrupted: checkpoint written to %s; continue with --run %s --resume\n", latest, run)
	}
	return err
}

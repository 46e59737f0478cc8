package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/d73a19ff/zoo/pretrain"
	"github.com/d73a19ff/zoo/train"
)

// runPretrain is `zoo pretrain gpt|seq2seq [flags]`.
func runPretrain(args []string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "seq2seq" {
		return runPretrainSeq2Seq(args[1:], stdout)
	}
	if len(args) == 0 || args[0] != "gpt" {
		return fmt.Errorf("%w: pretrain needs a model family: gpt or seq2seq", errUsage)
	}
	fs := flag.NewFlagSet("zoo pretrain gpt", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "JSON config file (nanoGPT key names; see pretrain.GPTConfig); flags override it")
	run := fs.String("run", "", "run directory (checkpoints, metrics.jsonl, loss.png)")
	corpus := fs.String("corpus", "", "corpus file, directory or glob (default: Newton's Opticks from the Go toolchain)")
	tok := fs.String("tokenizer", "", "char, bpe, or the path of a tokenizer.json")
	steps := fs.Int("max-iters", 0, "optimizer steps")
	batch := fs.Int("batch-size", 0, "sequences per micro-batch")
	evalEvery := fs.Int("eval-interval", 0, "evaluate every so many steps")
	seed := fs.Uint64("seed", 0, "seed of initialisation, batches and dropout")
	resume := fs.Bool("resume", false, "continue from the run directory's latest checkpoint")
	if help, err := parse(fs, args[1:], stdout, "usage: zoo pretrain gpt [flags]\n\nPretrains a GPT (causal LM). With no flags: nanoGPT's CPU configuration, character level, on Newton's Opticks."); help || err != nil {
		return err
	}
	cfg := pretrain.DefaultGPT()
	if *cfgPath != "" {
		var err error
		if cfg, err = pretrain.ReadGPTConfig(*cfgPath, cfg); err != nil {
			return err
		}
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "run":
			cfg.RunDir = *run
		case "corpus":
			cfg.Corpus = *corpus
		case "tokenizer":
			cfg.Tokenizer = *tok
		case "max-iters":
			cfg.MaxIters = *steps
		case "batch-size":
			cfg.Batch = *batch
		case "eval-interval":
			cfg.EvalEvery = *evalEvery
		case "seed":
			cfg.Seed = *seed
		case "resume":
			cfg.Resume = *resume
		}
	})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := pretrain.RunGPT(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.RunDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps, training loss %.4f, validation loss %.4f (best %.4f)\n", res.Steps, res.Loss, res.ValLoss, res.BestLoss)
	fmt.Fprintf(stdout, "checkpoint: %s\nloss curve: %s\n", res.Final, filepath.Join(cfg.RunDir, train.PlotFile))
	for i, s := range res.Samples {
		fmt.Fprintf(stdout, "\n--- sample %d ---\n%s\n", i+1, s)
	}
	fmt.Fprintf(stdout, "\ncontinue with:\n  go run ./cmd/zoo generate --checkpoint %s --prompt \"Light\"\n", res.Final)
	return nil
}

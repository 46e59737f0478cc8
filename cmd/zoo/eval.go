package main

import (
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/d73a19ff/zoo/finetune"
	"github.com/d73a19ff/zoo/pretrain"
)

// runEval is `zoo eval --checkpoint DIR (--corpus TEXT | --labelled FILE)`.
func runEval(args []string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "seq2seq" {
		return runEvalSeq2Seq(args[1:], stdout)
	}
	fs := flag.NewFlagSet("zoo eval", flag.ContinueOnError)
	ckpt := fs.String("checkpoint", "", "checkpoint directory (with tokenizer.json)")
	corpus := fs.String("corpus", "", "text to score a language model on: loss and perplexity")
	labelled := fs.String("labelled", "", "CSV, TSV or JSONL to score a classifier on: accuracy and macro-F1")
	batch := fs.Int("batch-size", 12, "windows or texts per batch")
	if help, err := parse(fs, args, stdout, "usage: zoo eval --checkpoint DIR (--corpus TEXT | --labelled FILE)"); help || err != nil {
		return err
	}
	switch {
	case *ckpt == "" || (*corpus == "") == (*labelled == ""):
		return fmt.Errorf("%w: give --checkpoint and one of --corpus or --labelled", errUsage)
	case *corpus != "":
		loss, n, err := pretrain.EvalGPT(*ckpt, *corpus, *batch)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "loss %.4f, perplexity %.3f over %d tokens\n", loss, math.Exp(loss), n)
	default:
		conf, err := finetune.EvalClassify(*ckpt, *labelled, *batch)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "accuracy %.4f, macro-F1 %.4f\n%v\n", conf.Accuracy(), conf.MacroF1(), conf)
	}
	return nil
}

package main

import (
	"fmt"
	"io"

	"github.com/d73a19ff/zoo/finetune"
	_ "github.com/d73a19ff/zoo/models/bert" // registers model_type bert
)

// runFinetuneBERT is `zoo finetune bert --task classify --init-from DIR
// --train-file FILE`: the shared classification pipeline on BERT's pooled
// [CLS]. Pretraining and the token and QA tasks arrive with the rest of the
// BERT issue.
func runFinetuneBERT(args []string, stdout io.Writer) error {
	if task := preScan(args, "task"); task != "" && task != "classify" {
		return fmt.Errorf("%w: --task %q: BERT fine-tunes --task classify for now", errUsage, task)
	}
	return runClassify("bert", args, stdout)
}

// runEvalClassifier is `zoo eval --checkpoint DIR --labelled FILE` for a
// family whose checkpoints are classifiers: accuracy, macro-F1 and the
// confusion matrix.
func runEvalClassifier(args []string, stdout io.Writer) error {
	if preScan(args, "corpus") != "" {
		return runEvalBERTPretraining(args, stdout)
	}
	f := newFlags("zoo eval", "usage: zoo eval --checkpoint DIR --labelled FILE\n\nScores a sequence classifier: accuracy, macro-F1 and the confusion matrix.")
	ckpt := f.String("checkpoint", "", "checkpoint directory (with tokenizer.json)")
	labelled := f.String("labelled", "", "CSV, TSV or JSONL to score the classifier on")
	batch := f.Int("batch-size", 12, "texts per batch")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if *ckpt == "" || *labelled == "" {
		return fmt.Errorf("%w: give --checkpoint and --labelled", errUsage)
	}
	conf, err := finetune.EvalClassify(*ckpt, *labelled, *batch)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "accuracy %.4f, macro-F1 %.4f\n%v\n", conf.Accuracy(), conf.MacroF1(), conf)
	return nil
}

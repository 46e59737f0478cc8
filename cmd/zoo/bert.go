package main

import (
	"fmt"
	"io"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/finetune"
	_ "github.com/d73a19ff/zoo/models/bert" // registers model_type bert
)

// runFinetuneBERT is `zoo finetune bert --task classify|tokens|qa
// --init-from DIR --train-file FILE`: sequence classification (the shared
// pipeline on BERT's pooled [CLS]), token classification or extractive QA.
func runFinetuneBERT(args []string, stdout io.Writer) error {
	switch task := preScan(args, "task"); task {
	case "", "classify":
		return runClassify("bert", args, stdout)
	case "tokens":
		return runFinetuneBERTTokens(args, stdout)
	case "qa":
		return runFinetuneBERTQA(args, stdout)
	default:
		return fmt.Errorf("%w: --task %q: BERT fine-tunes --task classify, tokens or qa", errUsage, task)
	}
}

// runEvalBERT is `zoo eval` for a BERT checkpoint, by the data given:
// --corpus (pretraining: MLM and NSP), --squad (QA: EM and F1), --conll
// (token classification: accuracy, entity F1) or --labelled
// (classification).
func runEvalBERT(args []string, stdout io.Writer) error {
	switch {
	case preScan(args, "corpus") != "":
		return runEvalBERTPretraining(args, stdout)
	case preScan(args, "squad") != "":
		return runEvalBERTQA(args, stdout)
	case preScan(args, "conll") != "":
		return runEvalBERTTokens(args, stdout)
	}
	return runEvalClassifier(args, stdout)
}

// runEvalClassifier is `zoo eval --checkpoint DIR --labelled FILE` for a
// family whose checkpoints are classifiers: accuracy, macro-F1 and the
// confusion matrix.
func runEvalClassifier(args []string, stdout io.Writer) error {
	f := newFlags("zoo eval", "usage: zoo eval --checkpoint DIR --labelled FILE\n\nScores a sequence classifier: accuracy, macro-F1 and the confusion matrix.")
	ckpt := f.String("checkpoint", "", "checkpoint directory (with tokenizer.json)")
	labelled := f.String("labelled", "", "CSV, TSV or JSONL to score the classifier on")
	batch := f.Int("batch-size", 12, "texts per batch")
	var opts datasets.LabelledOptions
	f.StringVar(&opts.TextColumn, "text-column", "", "the text's column or key (default text)")
	f.StringVar(&opts.TextPairColumn, "text-pair-column", "", "the second text's column or key, for sentence pairs")
	f.StringVar(&opts.LabelColumn, "label-column", "", "the label's column or key (default label)")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if *ckpt == "" || *labelled == "" {
		return fmt.Errorf("%w: give --checkpoint and --labelled", errUsage)
	}
	conf, err := finetune.EvalClassifyWith(*ckpt, *labelled, *batch, opts, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "accuracy %.4f, macro-F1 %.4f\n%v\n", conf.Accuracy(), conf.MacroF1(), conf)
	return nil
}

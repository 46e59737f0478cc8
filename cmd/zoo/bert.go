package main

import (
	"fmt"
	"io"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/finetune"
	"github.com/d73a19ff/zoo/layers"
	_ "github.com/d73a19ff/zoo/models/bert" // registers model_type bert
)

// runFinetuneBERT is `zoo finetune bert --task classify|tokens|qa|embeddings
// --init-from DIR --train-file FILE`: sequence classification (the shared
// pipeline on BERT's pooled [CLS]), token classification, extractive QA or
// sentence embeddings.
func runFinetuneBERT(args []string, stdout io.Writer) error {
	switch task := preScan(args, "task"); task {
	case "", "classify":
		return runClassify("bert", args, stdout)
	case "tokens":
		return runFinetuneBERTTokens(args, stdout)
	case "qa":
		return runFinetuneBERTQA(args, stdout)
	case "embeddings":
		return runFinetuneBERTEmbeddings(args, stdout)
	default:
		return fmt.Errorf("%w: --task %q: BERT fine-tunes --task %s", errUsage, task, bertTasks)
	}
}

// runEvalBERT is `zoo eval` for a BERT checkpoint, by the data given:
// --corpus (pretraining: MLM and NSP), --squad (QA: EM and F1), --conll
// (token classification: accuracy, entity F1) or --labelled
// (classification). Given none, the checkpoint's head (its config.json's
// architectures) picks the evaluation, whose usage then says what data it
// needs.
func runEvalBERT(args []string, stdout io.Writer) error {
	switch {
	case preScan(args, "corpus") != "" && bertHead(preScan(args, "checkpoint")) == "ElectraForPreTraining":
		return runEvalElectra(args, stdout)
	case preScan(args, "corpus") != "":
		return runEvalBERTPretraining(args, stdout)
	case preScan(args, "squad") != "":
		return runEvalBERTQA(args, stdout)
	case preScan(args, "conll") != "":
		return runEvalBERTTokens(args, stdout)
	case preScan(args, "labelled") != "":
		return runEvalClassifier(args, stdout)
	}
	switch bertHead(preScan(args, "checkpoint")) {
	case "BertForPreTraining", "BertForMaskedLM", "BertModel":
		return runEvalBERTPretraining(args, stdout)
	case "BertForQuestionAnswering":
		return runEvalBERTQA(args, stdout)
	case "BertForTokenClassification":
		return runEvalBERTTokens(args, stdout)
	}
	return runEvalClassifier(args, stdout)
}

// bertHead is the first class of dir's config.json architectures, or ""
// when it cannot be read (the evaluation then reports the problem).
func bertHead(dir string) string {
	var a struct {
		Architectures []string `json:"architectures"`
	}
	if dir == "" || layers.ReadConfig(dir, &a) != nil || len(a.Architectures) == 0 {
		return ""
	}
	return a.Architectures[0]
}

// finetuneTasks is what --task takes in zoo finetune family -h.
func finetuneTasks(family string) string {
	if family == "bert" {
		return bertTasks
	}
	return "lm or classify"
}

// bertTasks are the tasks of zoo finetune bert, as -h lists them.
const bertTasks = "classify (sequence classification), tokens (token classification, CoNLL), qa (extractive question answering, SQuAD v1.1) or embeddings (sentence embeddings, in-batch negatives on pairs)"

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
	ctx, stop := signalContext()
	defer stop()
	conf, err := finetune.EvalClassifyWith(ctx, *ckpt, *labelled, *batch, opts, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "accuracy %.4f, macro-F1 %.4f\n%v\n", conf.Accuracy(), conf.MacroF1(), conf)
	return nil
}

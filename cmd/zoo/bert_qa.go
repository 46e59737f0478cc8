package main

import (
	"fmt"
	"io"
	"sort"

	"github.com/d73a19ff/zoo/finetune"
)

// runFinetuneBERTQA is `zoo finetune bert --task qa --init-from DIR
// --train-file SQUAD.json [--validation-file SQUAD.json] [--scratch]`:
// extractive question answering (SQuAD v1.1) with a span head on the
// checkpoint's backbone, reporting exact match and F1 on the validation
// questions beside trivial baselines.
func runFinetuneBERTQA(args []string, stdout io.Writer) error {
	cfg, err := readConfig(args, finetune.DefaultQA(), finetune.ReadQAConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo finetune bert", "usage: zoo finetune bert --task qa --init-from DIR --train-file SQUAD.json [--validation-file SQUAD.json] [--scratch] [flags]\n\nPuts a span head (qa_outputs) on the BERT checkpoint and fine-tunes it on SQuAD v1.1 JSON; reports exact match and F1 (the official v1.1 definitions) on the validation questions, beside trivial baselines. With --scratch the same architecture and tokenizer train from random weights.")
	f.String("task", "qa", bertTasks)
	f.taskFlags(&cfg.Training, &cfg.Checkpoint, &cfg.TrainFile, &cfg.ValFile, "windows", "a BERT or DistilBERT checkpoint with a WordPiece tokenizer.json, or a RoBERTa with its byte-level BPE", "SQuAD v1.1 JSON")
	f.IntVar(&cfg.MaxSeqLength, "max-seq-length", cfg.MaxSeqLength, "tokens per window, [CLS] question [SEP] context [SEP] (clipped to max_position_embeddings)")
	f.IntVar(&cfg.DocStride, "doc-stride", cfg.DocStride, "context tokens between the starts of two windows")
	f.IntVar(&cfg.MaxQueryLength, "max-query-length", cfg.MaxQueryLength, "question tokens kept")
	f.IntVar(&cfg.MaxAnswerLength, "max-answer-length", cfg.MaxAnswerLength, "longest predicted answer, in tokens")
	f.IntVar(&cfg.NBest, "n-best-size", cfg.NBest, "start and end candidates per window")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if err := f.taskReady(&cfg.Training, cfg.Checkpoint, cfg.TrainFile, "bert", "SQuAD v1.1 JSON"); err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	res, err := finetune.RunQA(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.OutputDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps; validation (%d questions) exact match %.2f, F1 %.2f\n", res.Steps, res.Scores.N, res.Scores.ExactMatch, res.Scores.F1)
	printBaselines(stdout, res.Baselines)
	fmt.Fprintln(stdout, checkpointLine(res.Final, res.Best, res.BestStep))
	return nil
}

func printBaselines(w io.Writer, b map[string]finetune.SquadScores) {
	names := make([]string, 0, len(b))
	for n := range b {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "baseline %q: exact match %.2f, F1 %.2f\n", n, b[n].ExactMatch, b[n].F1)
	}
}

// runEvalBERTQA is `zoo eval --checkpoint DIR --squad FILE`: exact match
// and F1 of a BERT question-answering checkpoint on SQuAD v1.1 JSON.
func runEvalBERTQA(args []string, stdout io.Writer) error {
	def := finetune.DefaultQA()
	f := newFlags("zoo eval", "usage: zoo eval --checkpoint DIR --squad FILE\n\nScores a BERT question-answering checkpoint on SQuAD v1.1 JSON: exact match and F1 (the official v1.1 definitions), beside trivial baselines.")
	ckpt := f.String("checkpoint", "", "checkpoint directory (with tokenizer.json) fine-tuned by zoo finetune bert --task qa")
	squad := f.String("squad", "", "SQuAD v1.1 JSON to score")
	f.IntVar(&def.BatchSize, "batch-size", 16, "windows per batch")
	f.IntVar(&def.MaxSeqLength, "max-seq-length", def.MaxSeqLength, "tokens per window (clipped to max_position_embeddings)")
	f.IntVar(&def.DocStride, "doc-stride", def.DocStride, "context tokens between the starts of two windows")
	f.IntVar(&def.MaxQueryLength, "max-query-length", def.MaxQueryLength, "question tokens kept")
	f.IntVar(&def.MaxAnswerLength, "max-answer-length", def.MaxAnswerLength, "longest predicted answer, in tokens")
	f.IntVar(&def.NBest, "n-best-size", def.NBest, "start and end candidates per window")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if *ckpt == "" || *squad == "" {
		return fmt.Errorf("%w: give --checkpoint and --squad", errUsage)
	}
	if def.BatchSize <= 0 {
		return fmt.Errorf("%w: --batch-size %d must be positive", errUsage, def.BatchSize)
	}
	ctx, stop := signalContext()
	defer stop()
	res, err := finetune.EvalQAWith(ctx, *ckpt, *squad, def, stdout)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d questions (%d windows): exact match %.2f, F1 %.2f\n", res.Scores.N, res.Features, res.Scores.ExactMatch, res.Scores.F1)
	printBaselines(stdout, res.Baselines)
	return nil
}

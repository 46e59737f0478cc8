package main

import (
	"fmt"
	"io"

	"github.com/d73a19ff/zoo/finetune"
)

// runFinetuneBERTTokens is `zoo finetune bert --task tokens --init-from
// DIR --train-file FILE [--validation-file FILE] [--scratch]`: token
// classification (part of speech, named entities) on CoNLL files.
func runFinetuneBERTTokens(args []string, stdout io.Writer) error {
	cfg, err := readConfig(args, finetune.DefaultTokens(), finetune.ReadTokensConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo finetune bert", "usage: zoo finetune bert --task tokens --init-from DIR --train-file FILE [--validation-file FILE] [--scratch] [flags]\n\n"+
		"Puts a token-classification head on a BERT checkpoint and fine-tunes it on CoNLL files (word … tag per line, a blank line between\n"+
		"sentences); reports word accuracy (and chunk precision, recall and F1 for BIO tags) beside the most-frequent-tag baseline.")
	f.String("task", "tokens", bertTasks)
	f.taskFlags(&cfg.Training, &cfg.Checkpoint, &cfg.TrainFile, &cfg.ValFile, "sentences", "the BERT, DistilBERT (WordPiece tokenizer.json) or RoBERTa (byte-level BPE) checkpoint to put the tagger on", "CoNLL file")
	f.IntVar(&cfg.MaxLength, "max-length", cfg.MaxLength, "tokens per sentence with [CLS] and [SEP] (0: all the model takes); longer sentences are truncated and counted")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if err := f.taskReady(&cfg.Training, cfg.Checkpoint, cfg.TrainFile, "bert", "CoNLL"); err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	res, err := finetune.RunTokens(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.OutputDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps\n", res.Steps)
	printTokenScores(stdout, "model", res.Scores)
	printTokenScores(stdout, "most-frequent-tag baseline", res.Baseline)
	fmt.Fprintln(stdout, checkpointLine(res.Final, res.Best, res.BestStep))
	return nil
}

// printTokenScores prints one scorer's line, its chunk table for BIO tags,
// and the words it could not get right.
func printTokenScores(w io.Writer, who string, s finetune.TokenScores) {
	fmt.Fprintf(w, "%s: %v\n", who, s)
	if s.Truncated > 0 {
		fmt.Fprintf(w, "  %d sentences truncated: %d words past the length limit scored as errors\n", s.Truncated, s.Dropped)
	}
	if s.Unseen > 0 {
		fmt.Fprintf(w, "  %d words have a tag the model does not know (absent from the training file): errors\n", s.Unseen)
	}
	if s.Entities != nil {
		fmt.Fprintf(w, "%v\n", s.Entities)
	}
}

// runEvalBERTTokens is `zoo eval --checkpoint DIR --conll FILE` for a BERT
// token classifier: word accuracy, and chunk scores for BIO tags.
func runEvalBERTTokens(args []string, stdout io.Writer) error {
	f := newFlags("zoo eval", "usage: zoo eval --checkpoint DIR --conll FILE\n\nScores a BERT token classifier on a CoNLL file: word accuracy, and chunk precision, recall and F1 for BIO tags.")
	ckpt := f.String("checkpoint", "", "token-classifier checkpoint directory (with tokenizer.json)")
	conll := f.String("conll", "", "CoNLL file to score the tagger on (word … tag per line)")
	batch := f.Int("batch-size", 16, "sentences per batch")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if *ckpt == "" || *conll == "" {
		return fmt.Errorf("%w: give --checkpoint and --conll", errUsage)
	}
	ctx, stop := signalContext()
	defer stop()
	s, err := finetune.EvalTokensWith(ctx, *ckpt, *conll, *batch, stdout)
	if err != nil {
		return err
	}
	printTokenScores(stdout, "tagger", s)
	return nil
}

package main

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/pretrain"
	"github.com/d73a19ff/zoo/train"
)

// bertPresets are the model sizes --model names.
var bertPresets = map[string]func() bert.Config{
	"tiny": bert.Tiny, "mini": bert.Mini, "small": bert.Small, "medium": bert.Medium, "base": bert.Base,
}

// runPretrainBERT is `zoo pretrain bert --corpus DIR [flags]`: masked LM and
// next-sentence prediction.
func runPretrainBERT(args []string, stdout io.Writer) error {
	cfg, err := readConfig(args, pretrain.DefaultBERT(), pretrain.ReadBERTConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo pretrain bert", "usage: zoo pretrain bert --corpus FILES [flags]\n\nPretrains a BERT with masked LM and next-sentence prediction (--model-type roberta or distilbert: masked LM only). The corpus has one sentence per line and a blank line between documents (tools/corpus2txt builds one from installed packages). Default: BERT-Mini, sequences of 128, a WordPiece of 16384 tokens trained on the corpus.")
	f.bertPretrainFlags(&cfg, "a BERT (model, config and tokenizer) to pretrain further")
	preset := f.String("model", "", "model size: tiny, mini, small, medium or base (default mini; a --config's model section otherwise)")
	f.StringVar(&cfg.ModelType, "model-type", cfg.ModelType, "bert (MLM + next-sentence prediction), albert (MLM + sentence-order prediction; the model an ALBERT of its sizes, one shared layer), roberta (MLM only, a byte-level BPE trained on the corpus, dynamic masking) or distilbert (MLM only, no distillation)")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if *preset != "" {
		p, ok := bertPresets[strings.ToLower(*preset)]
		if !ok {
			return fmt.Errorf("%w: --model %q: use tiny, mini, small, medium or base", errUsage, *preset)
		}
		cfg.Model = p()
		cfg.Model.MaxPositionEmbeddings = max(cfg.MaxSeqLength, 128)
	}
	cfg.WarmupSteps = f.warmup(cfg.WarmupSteps, cfg.MaxSteps)
	ctx, stop := signalContext()
	defer stop()
	res, err := pretrain.RunBERT(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.OutputDir, stdout)
	}
	pair := "NSP"
	if cfg.ModelType == pretrain.AlbertModelType || cfg.Model.ModelType == bert.AlbertModelType {
		pair = "SOP" // ALBERT's sentence order
	}
	held := fmt.Sprintf("held-out: MLM accuracy %.4f, MLM perplexity %.2f (%d validation sequences)\n", res.MLMAccuracy, res.MLMPerplexity(), res.ValPairs)
	if !res.MLMOnly {
		held = fmt.Sprintf("held-out: MLM accuracy %.4f, MLM perplexity %.2f, %s accuracy %.4f (%d validation pairs)\n",
			res.MLMAccuracy, res.MLMPerplexity(), pair, res.NSPAccuracy, res.ValPairs)
	}
	pretrainDone(stdout, res.Result, cfg.OutputDir, held)
	return nil
}

// pretrainDone writes the end of a zoo pretrain bert or electra run: the
// steps and losses, held (its held-out figures' line), the checkpoints,
// the loss curve, and the fine-tuning command to continue with.
func pretrainDone(stdout io.Writer, res train.Result, outputDir, held string) {
	fmt.Fprintf(stdout, "\ndone: %d steps, training loss %.4f, validation loss %.4f (best %.4f)\n", res.Steps, res.Loss, res.ValLoss, res.BestLoss)
	fmt.Fprint(stdout, held)
	fmt.Fprintf(stdout, "%s\nloss curve: %s\n", checkpointLine(res.Final, res.Best, res.BestStep), filepath.Join(outputDir, train.PlotFile))
	fmt.Fprintf(stdout, "\ncontinue with:\n  go run ./cmd/zoo finetune bert --task classify --init-from %s --train-file FILE\n", cmp.Or(res.Best, res.Final))
}

// bertPretrainFlags binds the flags zoo pretrain bert and zoo pretrain
// electra share: the training arguments, the corpus and its WordPiece, and
// the pairs' data settings; initWhat is what --init-from takes.
func (f *cmdFlags) bertPretrainFlags(cfg *pretrain.BERTConfig, initWhat string) {
	f.trainArgs(&cfg.Args, &cfg.InitFrom, argsHelp{batchWhat: "sequences", warmupWhat: "before the linear decay", initWhat: initWhat})
	f.StringVar(&cfg.Corpus, "corpus", cfg.Corpus, "corpus file, directory or glob: one sentence per line, a blank line between documents")
	f.StringVar(&cfg.Tokenizer, "tokenizer", cfg.Tokenizer, "wordpiece (train one on the corpus), or a BERT tokenizer.json or vocab.txt")
	f.IntVar(&cfg.VocabSize, "vocab-size", cfg.VocabSize, "with --tokenizer wordpiece: the vocabulary's size")
	f.IntVar(&cfg.MaxSeqLength, "max-seq-length", cfg.MaxSeqLength, "tokens per example, [CLS] and [SEP]s included")
	f.IntVar(&cfg.MaxPredictions, "max-predictions", cfg.MaxPredictions, "most predicted tokens per example")
	f.BoolVar(&cfg.WholeWordMask, "whole-word-mask", cfg.WholeWordMask, "mask every piece of a word together")
	f.BoolVar(&cfg.DynamicMasking, "dynamic-masking", cfg.DynamicMasking, "new masks every epoch instead of one set per example")
	f.IntVar(&cfg.EvalBatches, "eval-batches", cfg.EvalBatches, "validation batches per evaluation (0: all)")
}

// runEvalBERTPretraining is `zoo eval --checkpoint DIR --corpus FILES`
// for a BERT pretraining checkpoint: masked-LM accuracy and perplexity,
// next-sentence accuracy.
func runEvalBERTPretraining(args []string, stdout io.Writer) error {
	f := newFlags("zoo eval", "usage: zoo eval --checkpoint DIR --corpus FILES [flags]\n\nScores a BERT pretraining checkpoint on a corpus (one sentence per line, blank lines between documents): masked-LM accuracy and perplexity, next-sentence accuracy.")
	ev := newCorpusEval(f, "BERT checkpoint directory (with tokenizer.json)", "max_position_embeddings; a RoBERTa's less pad_token_id + 1", "most predicted tokens per example", "seed of the pairs and masks")
	if done, err := ev.parse(args, stdout, "a BERT pretraining checkpoint"); done || err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	e, err := pretrain.EvalBERT(ctx, *ev.ckpt, *ev.corpus, ev.cfg, *ev.batch, *ev.limit, *ev.seed)
	if err != nil {
		return err
	}
	if e.MLMOnly {
		fmt.Fprintf(stdout, "%d sequences, %d predicted tokens: MLM accuracy %.4f, MLM loss %.4f (perplexity %.2f)\n",
			e.Pairs, e.Predictions, e.MLMAccuracy, e.MLMLoss, e.MLMPerplexity())
		return nil
	}
	pair := "NSP"
	if e.SentenceOrder {
		pair = "SOP" // an ALBERT's sentence order
	}
	fmt.Fprintf(stdout, "%d pairs, %d predicted tokens: MLM accuracy %.4f, MLM loss %.4f (perplexity %.2f); %s accuracy %.4f, %s loss %.4f\n",
		e.Pairs, e.Predictions, e.MLMAccuracy, e.MLMLoss, e.MLMPerplexity(), pair, e.NSPAccuracy, pair, e.NSPLoss)
	return nil
}

// corpusEval is zoo eval's command line for a pretraining checkpoint
// scored on a corpus (zoo pretrain bert's and electra's): the checkpoint,
// the corpus, the pairs' settings, the batch size, the pair limit and the
// seed.
type corpusEval struct {
	f            *cmdFlags
	ckpt, corpus *string
	cfg          pretrain.BERTPairConfig
	batch, limit *int
	seed         *uint64
}

// newCorpusEval binds corpusEval's flags on f; the help texts name the
// checkpoint (ckptWhat), --max-seq-length's default (maxSeqWhat), the
// predictions and what the seed draws.
func newCorpusEval(f *cmdFlags, ckptWhat, maxSeqWhat, predictionsWhat, seedWhat string) *corpusEval {
	e := &corpusEval{f: f, cfg: pretrain.DefaultBERTPairs()}
	e.ckpt = f.String("checkpoint", "", ckptWhat)
	e.corpus = f.String("corpus", "", "corpus file, directory or glob")
	f.IntVar(&e.cfg.MaxSeqLength, "max-seq-length", 0, "tokens per example (default: the checkpoint's "+maxSeqWhat+")")
	f.IntVar(&e.cfg.MaxPredictions, "max-predictions", e.cfg.MaxPredictions, predictionsWhat)
	f.BoolVar(&e.cfg.WholeWordMask, "whole-word-mask", false, "mask every piece of a word together")
	e.batch = f.Int("batch-size", 32, "sequences per batch")
	e.limit = f.Int("limit", 2000, "score at most this many pairs (0: all)")
	e.seed = f.Uint64("seed", 1, seedWhat)
	return e
}

// parse parses args (done after a help request), requires --checkpoint
// and --corpus (what names the checkpoint in the error), takes
// --max-seq-length from the checkpoint when it is not given, and notes
// the corpus's unknown tokens.
func (e *corpusEval) parse(args []string, stdout io.Writer, what string) (done bool, err error) {
	if help, err := e.f.parse(args, stdout); help || err != nil {
		return true, err
	}
	if *e.ckpt == "" || *e.corpus == "" {
		return true, fmt.Errorf("%w: give --checkpoint and --corpus (%s is scored on a corpus)", errUsage, what)
	}
	if !e.f.isSet("max-seq-length") {
		var mc bert.Config
		if err := models.ReadConfig(*e.ckpt, "bert", &mc); err != nil {
			return true, err
		}
		e.cfg.MaxSeqLength = mc.MaxTokens() // max_position_embeddings, or a RoBERTa's less pad_token_id + 1
	}
	return false, noteCorpusUnknowns(stdout, *e.ckpt, *e.corpus)
}

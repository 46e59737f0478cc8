package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/pretrain"
	"github.com/d73a19ff/zoo/train"
)

// electraPresets are the discriminator shapes zoo pretrain electra
// --model names, for max positions.
var electraPresets = map[string]func(int) bert.Config{
	"tiny": pretrain.ElectraTinyShape, "small": pretrain.ElectraSmallShape,
}

// runPretrainElectra is `zoo pretrain electra --corpus DIR [flags]`:
// replaced-token detection, a generator and a discriminator sharing their
// embeddings, on zoo pretrain bert's corpus format and flags.
func runPretrainElectra(args []string, stdout io.Writer) error {
	cfg, err := readConfig(args, pretrain.DefaultElectra(), pretrain.ReadElectraConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo pretrain electra", "usage: zoo pretrain electra --corpus FILES [flags]\n\nPretrains an ELECTRA: a small generator fills masked tokens by sampling and the discriminator tells each token replaced or original (loss = generator MLM + λ·discriminator BCE); the two share their embeddings. The corpus is zoo pretrain bert's: one sentence per line, a blank line between documents (tools/corpus2txt builds one). Default: ELECTRA-Small (12 layers, 256 wide, embeddings 128) with a generator a quarter of its width, sequences of 128, a WordPiece of 16384 tokens trained on the corpus. The checkpoints are the discriminator (ElectraForPreTraining: zoo finetune bert --init-from takes it) with the generator (ElectraForMaskedLM) in generator/.")
	f.bertPretrainFlags(&cfg.BERTConfig, "a zoo pretrain electra checkpoint (the discriminator, its generator in generator/) to pretrain further")
	f.Float64Var(&cfg.GeneratorSize, "generator-size", cfg.GeneratorSize, "the generator's width as a share of the discriminator's (hidden_size; 4× that inner, one head per 64)")
	gen := f.String("generator", "", "the generator's ELECTRA config instead: a config.json or a checkpoint directory (its embeddings must match the discriminator's)")
	f.Float64Var(&cfg.DiscWeight, "disc-weight", cfg.DiscWeight, "λ, the weight of the discriminator's loss")
	preset := f.String("model", "", "discriminator size: tiny (2 layers, 128 wide, embeddings 64) or small (ELECTRA-Small; the default, or a --config's model section)")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if *preset != "" {
		p, ok := electraPresets[strings.ToLower(*preset)]
		if !ok {
			return fmt.Errorf("%w: --model %q: use tiny or small", errUsage, *preset)
		}
		cfg.Model = p(max(cfg.MaxSeqLength, 128))
	}
	if *gen != "" {
		if cfg.Generator, err = json.Marshal(*gen); err != nil {
			return err
		}
	}
	cfg.WarmupSteps = f.warmup(cfg.WarmupSteps, cfg.MaxSteps)
	ctx, stop := signalContext()
	defer stop()
	res, err := pretrain.RunElectra(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.OutputDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps, training loss %.4f, validation loss %.4f (best %.4f)\n", res.Steps, res.Loss, res.ValLoss, res.BestLoss)
	fmt.Fprintf(stdout, "held-out: replaced-token detection accuracy %.4f (all-original baseline %.4f), AUC %.4f; generator MLM accuracy %.4f (%d tokens, %d validation pairs)\n",
		res.RTDAccuracy, res.Baseline, res.RTDAUC, res.MLMAccuracy, res.Tokens, res.ValPairs)
	fmt.Fprintf(stdout, "%s\nloss curve: %s\n", checkpointLine(res.Final, res.Best, res.BestStep), filepath.Join(cfg.OutputDir, train.PlotFile))
	fmt.Fprintf(stdout, "\ncontinue with:\n  go run ./cmd/zoo finetune bert --task classify --init-from %s --train-file FILE\n", cmp.Or(res.Best, res.Final))
	return nil
}

// runEvalElectra is `zoo eval --checkpoint DIR --corpus FILES` for a zoo
// pretrain electra checkpoint: replaced-token detection accuracy against
// its all-original baseline, AUC, and the generator's MLM accuracy.
func runEvalElectra(args []string, stdout io.Writer) error {
	f := newFlags("zoo eval", "usage: zoo eval --checkpoint DIR --corpus FILES [flags]\n\nScores a zoo pretrain electra checkpoint (the discriminator, its generator in generator/) on a corpus (one sentence per line, blank lines between documents): replaced-token detection accuracy and AUC, the generator's MLM accuracy, the losses.")
	ckpt := f.String("checkpoint", "", "ELECTRA pretraining checkpoint directory (with tokenizer.json and generator/)")
	corpus := f.String("corpus", "", "corpus file, directory or glob")
	cfg := pretrain.DefaultBERTPairs()
	f.IntVar(&cfg.MaxSeqLength, "max-seq-length", 0, "tokens per example (default: the checkpoint's max_position_embeddings)")
	f.IntVar(&cfg.MaxPredictions, "max-predictions", cfg.MaxPredictions, "most masked tokens per example")
	f.BoolVar(&cfg.WholeWordMask, "whole-word-mask", false, "mask every piece of a word together")
	lambda := f.Float64("disc-weight", pretrain.DefaultElectra().DiscWeight, "λ, the weight of the discriminator's loss in the loss reported")
	batch := f.Int("batch-size", 32, "sequences per batch")
	limit := f.Int("limit", 2000, "score at most this many pairs (0: all)")
	seed := f.Uint64("seed", 1, "seed of the pairs, masks and the generator's samples")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if *ckpt == "" || *corpus == "" {
		return fmt.Errorf("%w: give --checkpoint and --corpus (an ELECTRA pretraining checkpoint is scored on a corpus)", errUsage)
	}
	if !f.isSet("max-seq-length") {
		var mc bert.Config
		if err := models.ReadConfig(*ckpt, "bert", &mc); err != nil {
			return err
		}
		cfg.MaxSeqLength = mc.MaxPositionEmbeddings
	}
	if err := noteCorpusUnknowns(stdout, *ckpt, *corpus); err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	e, err := pretrain.EvalElectra(ctx, *ckpt, *corpus, cfg, *lambda, *batch, *limit, *seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d pairs, %d tokens: replaced-token detection accuracy %.4f (all-original baseline %.4f, %.1f%% replaced), AUC %.4f; generator MLM accuracy %.4f; loss %.4f (MLM %.4f, RTD %.4f)\n",
		e.Pairs, e.Tokens, e.RTDAccuracy, e.Baseline, 100*e.Replaced, e.RTDAUC, e.MLMAccuracy, e.Loss, e.MLMLoss, e.RTDLoss)
	return nil
}

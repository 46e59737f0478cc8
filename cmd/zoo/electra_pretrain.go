package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/d73a19ff/zoo/models/bert"
	"github.com/d73a19ff/zoo/pretrain"
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
	pretrainDone(stdout, res.Result, cfg.OutputDir, fmt.Sprintf("held-out: replaced-token detection accuracy %.4f (all-original baseline %.4f), AUC %.4f; generator MLM accuracy %.4f (%d tokens, %d validation pairs)\n",
		res.RTDAccuracy, res.Baseline, res.RTDAUC, res.MLMAccuracy, res.Tokens, res.ValPairs))
	return nil
}

// runEvalElectra is `zoo eval --checkpoint DIR --corpus FILES` for a zoo
// pretrain electra checkpoint: replaced-token detection accuracy against
// its all-original baseline, AUC, and the generator's MLM accuracy.
func runEvalElectra(args []string, stdout io.Writer) error {
	f := newFlags("zoo eval", "usage: zoo eval --checkpoint DIR --corpus FILES [flags]\n\nScores a zoo pretrain electra checkpoint (the discriminator, its generator in generator/) on a corpus (one sentence per line, blank lines between documents): replaced-token detection accuracy and AUC, the generator's MLM accuracy, the losses.")
	ev := newCorpusEval(f, "ELECTRA pretraining checkpoint directory (with tokenizer.json and generator/)", "max_position_embeddings", "most masked tokens per example", "seed of the pairs, masks and the generator's samples")
	lambda := f.Float64("disc-weight", pretrain.DefaultElectra().DiscWeight, "λ, the weight of the discriminator's loss in the loss reported")
	if done, err := ev.parse(args, stdout, "an ELECTRA pretraining checkpoint"); done || err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	e, err := pretrain.EvalElectra(ctx, *ev.ckpt, *ev.corpus, ev.cfg, *lambda, *ev.batch, *ev.limit, *ev.seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d pairs, %d tokens: replaced-token detection accuracy %.4f (all-original baseline %.4f, %.1f%% replaced), AUC %.4f; generator MLM accuracy %.4f; loss %.4f (MLM %.4f, RTD %.4f)\n",
		e.Pairs, e.Tokens, e.RTDAccuracy, e.Baseline, 100*e.Replaced, e.RTDAUC, e.MLMAccuracy, e.Loss, e.MLMLoss, e.RTDLoss)
	return nil
}

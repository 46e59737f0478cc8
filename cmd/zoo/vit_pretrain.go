package main

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models/vit"
	"github.com/d73a19ff/zoo/pretrain"
	"github.com/d73a19ff/zoo/train"
)

// maePresets are the MAE sizes --model names.
var maePresets = map[string]func() vit.ViTMAEConfig{
	"fashion": vit.MAEFashion, "tiny": vit.MAETiny, "small": vit.MAESmall, "base": vit.MAEBase,
}

// runPretrainViT is `zoo pretrain vit --data FILE|DIR [flags]`: MAE
// pretraining (masked patch reconstruction).
func runPretrainViT(args []string, stdout io.Writer) error {
	cfg, err := readConfig(args, pretrain.DefaultMAE(), pretrain.ReadMAEConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo pretrain vit", "usage: zoo pretrain vit --data IMAGES [--labels LABELS] [flags]\n\nPretrains a ViT as a masked autoencoder (He et al. 2022, Hugging Face's ViTMAEForPreTraining): 75% of each image's patches hidden, the encoder reads the rest, a light decoder predicts the hidden pixels. --data is an IDX images file (MNIST, Fashion-MNIST; --labels is optional and unused), a folder of class folders, or a CSV of path,label. Each evaluation writes reconstructions.png (originals, masked inputs, reconstructions, reconstructions with the visible patches) in the run directory. The checkpoint's encoder fine-tunes as a ViT classifier. Default: the fashion preset (28×28 grey, the Fashion encoder, a 64-wide 2-layer decoder), batch 256, learning rate blr × batch/256 with blr 1.5e-3 (ten times MAE's, for a schedule of thousands of steps).")
	f.trainArgs(&cfg.Args, nil, argsHelp{batchWhat: "images", warmupWhat: "before the cosine decay"})
	f.StringVar(&cfg.Data, "data", cfg.Data, "images: an IDX images file (gzipped or not), a folder of class folders, or a CSV of path,label")
	f.StringVar(&cfg.Labels, "labels", cfg.Labels, "the IDX labels file of --data (optional; labels are not used)")
	preset := f.String("model", "", "model size: fashion (28×28×1), tiny, small or base (224×224×3, base is facebook/vit-mae-base) (default fashion; a --config's model section otherwise)")
	maskRatio := f.Float64("mask-ratio", 0, "fraction of the patches hidden (default the model's, 0.75)")
	normPix := f.Bool("norm-pix-loss", false, "normalise each target patch by its mean and variance")
	f.Float64Var(&cfg.BaseLR, "blr", cfg.BaseLR, "base learning rate: without --learning-rate the peak rate is blr × batch × accumulate / 256")
	f.IntVar(&cfg.EvalBatches, "eval-batches", cfg.EvalBatches, "validation batches per evaluation (0: all)")
	f.Float64Var(&cfg.ValFraction, "val-fraction", cfg.ValFraction, "share of the images held out")
	f.IntVar(&cfg.Pictures, "pictures", cfg.Pictures, "validation images in the reconstruction grid (0: none)")
	f.IntVar(&cfg.Workers, "workers", cfg.Workers, "image loading goroutines")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if *preset != "" {
		p, ok := maePresets[strings.ToLower(*preset)]
		if !ok {
			return fmt.Errorf("%w: --model %q: use fashion, tiny, small or base", errUsage, *preset)
		}
		cfg.Model = p()
		// The processor follows the preset's image_size; its mean and std,
		// unless the config file gives them, are the data's.
		cfg.Processor.Size = datasets.ImageSize{}
	}
	if f.isSet("mask-ratio") {
		cfg.Model.MaskRatio = *maskRatio
	}
	if f.isSet("norm-pix-loss") {
		cfg.Model.NormPixLoss = *normPix
	}
	cfg.WarmupSteps = f.warmup(cfg.WarmupSteps, cfg.MaxSteps)
	ctx, stop := signalContext()
	defer stop()
	res, err := pretrain.RunViTMAE(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.OutputDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps, training loss %.4f, held-out masked-patch MSE %.4f (best %.4f; the mean predictor's %.4f)\n",
		res.Steps, res.Loss, res.ValLoss, res.BestLoss, res.BaselineMSE)
	fmt.Fprintf(stdout, "%s\nloss curve: %s\n", checkpointLine(res.Final, res.Best, res.BestStep), filepath.Join(cfg.OutputDir, train.PlotFile))
	if res.Picture != "" {
		fmt.Fprintf(stdout, "reconstructions: %s\n", res.Picture)
	}
	fmt.Fprintf(stdout, "\nthe encoder fine-tunes as a ViT classifier (the decoder is dropped): start a ViT fine-tuning from %s\n", cmp.Or(res.Best, res.Final))
	return nil
}

package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/d73a19ff/zoo/finetune"
	_ "github.com/d73a19ff/zoo/models/vit" // registers model_type vit
)

// floatList is a flag of comma-separated floats ("0.5" or "0.485,0.456,0.406").
type floatList struct{ v *[]float64 }

func (f floatList) String() string {
	if f.v == nil {
		return ""
	}
	var s []string
	for _, x := range *f.v {
		s = append(s, strconv.FormatFloat(x, 'g', -1, 64))
	}
	return strings.Join(s, ",")
}

func (f floatList) Set(s string) error {
	var out []float64
	for _, p := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return fmt.Errorf("%q is not a comma-separated list of numbers", s)
		}
		out = append(out, x)
	}
	*f.v = out
	return nil
}

// floatPair is a flag of two comma-separated floats ("0.08,1").
type floatPair struct{ v *[2]float64 }

func (f floatPair) String() string {
	if f.v == nil {
		return ""
	}
	return fmt.Sprintf("%g,%g", f.v[0], f.v[1])
}

func (f floatPair) Set(s string) error {
	var l []float64
	if err := (floatList{&l}).Set(s); err != nil || len(l) != 2 {
		return fmt.Errorf("%q: want two numbers, low,high", s)
	}
	f.v[0], f.v[1] = l[0], l[1]
	return nil
}

// runFinetuneViT is `zoo finetune vit --train-data DATA [flags]`: image
// classification, from scratch with a preset or from a checkpoint.
func runFinetuneViT(args []string, stdout io.Writer) error {
	cfg, err := readConfig(args, finetune.DefaultImages(), finetune.ReadImagesConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo finetune vit", `usage: zoo finetune vit --train-data DATA [--train-labels IDX] [--validation-data DATA [--validation-labels IDX]] [flags]

Trains a ViT image classifier: from scratch with a preset (--model), or from
a ViT or ViT-MAE checkpoint (--init-from), at its image size or another one
(--image-size; the position embeddings are resampled). DATA is IDX images
(gzipped or not) with their IDX labels file, an ImageFolder directory (a
folder per class) or a CSV of path,label. Reports accuracy, macro-F1 and the
confusion matrix (RUN/confusion.png) on the validation set, and images/s.
Checkpoints hold config.json, model.safetensors and preprocessor_config.json.
Augmentation flags follow timm's train.py.`)
	t := &cfg.Training
	f.trainArgs(&t.Args, &cfg.InitFrom, argsHelp{batchWhat: "images", warmupWhat: "before the cosine (or linear) decay", initWhat: "a ViT or ViT-MAE checkpoint whose backbone the classifier starts from (default: a new model, --model)"})
	f.BoolVar(&t.Scratch, "scratch", t.Scratch, "with --init-from: its architecture (at --image-size) with fresh weights, the baseline for what pretraining gained")
	f.StringVar(&cfg.Model, "model", cfg.Model, "new model: fashion (28×28 grey, patch 4, 6×128), tiny, small, base (224×224 RGB, patch 16), or a ViT config .json")
	f.IntVar(&cfg.ImageSize, "image-size", cfg.ImageSize, "image side in pixels (0: the preset's or checkpoint's; another than the checkpoint's resamples its position embeddings)")
	f.IntVar(&cfg.PatchSize, "patch-size", cfg.PatchSize, "patch side of a new model (0: the preset's)")
	f.IntVar(&cfg.NumChannels, "num-channels", cfg.NumChannels, "channels of a new model: 1 (grey) or 3 (RGB) (0: the preset's)")
	f.StringVar(&cfg.Pool, "pool", cfg.Pool, "pooling: cls (class token) or mean (of the patches) (default: --init-from's, else cls); saved with the checkpoint, so eval and classify need not be told")
	f.StringVar(&cfg.PositionResample, "position-resample", cfg.PositionResample, "how a checkpoint's position embeddings are resampled to a new size: hf (default), size or timm")
	f.StringVar(&cfg.TrainData, "train-data", cfg.TrainData, "training images: IDX images file, ImageFolder directory or CSV of path,label")
	f.StringVar(&cfg.TrainLabels, "train-labels", cfg.TrainLabels, "IDX labels file of IDX --train-data")
	f.StringVar(&cfg.ValData, "validation-data", cfg.ValData, "validation or test images, as --train-data (default: --val-fraction of the training data)")
	f.StringVar(&cfg.ValLabels, "validation-labels", cfg.ValLabels, "IDX labels file of IDX --validation-data")
	f.Float64Var(&cfg.ValFraction, "val-fraction", cfg.ValFraction, "fraction of the training data held out when no --validation-data is given")
	f.StringVar(&cfg.LabelNames, "label-names", cfg.LabelNames, "class names by label id: fashion-mnist, or a comma-separated list (default: the data's: IDX ids, folder names, CSV labels)")
	f.Float64Var(&cfg.LabelFraction, "label-fraction", cfg.LabelFraction, "fraction of each class's training images kept (stratified): 0.01, 0.1 or 1 for label-efficiency runs")
	f.Var(floatList{&cfg.ImageMean}, "image-mean", "normalisation mean of pixels in [0, 1], one value or one per channel (default: the checkpoint's, an IDX set's own, else 0.5); saved once per channel")
	f.Var(floatList{&cfg.ImageStd}, "image-std", "normalisation std, positive, as --image-mean; each of the two may be given alone")
	f.IntVar(&cfg.Workers, "workers", cfg.Workers, "goroutines that decode and augment batches ahead of the step (at most 256; about one per core)")
	f.BoolVar(&cfg.ResizedCrop, "random-resized-crop", cfg.ResizedCrop, "random resized crop (torchvision's RandomResizedCrop) of --scale and --ratio")
	f.Var(floatPair{&cfg.Scale}, "scale", "random resized crop's area range")
	f.Var(floatPair{&cfg.Ratio}, "ratio", "random resized crop's aspect ratio range")
	f.IntVar(&cfg.Padding, "crop-padding", cfg.Padding, "random crop after padding each side with so many black pixels (RandomCrop(size, padding)); 0: off")
	f.Float64Var(&cfg.FlipProb, "hflip", cfg.FlipProb, "horizontal flip probability")
	f.Float64Var(&cfg.EraseProb, "reprob", cfg.EraseProb, "random erasing probability (timm's RandomErasing)")
	f.Float64Var(&cfg.MixupAlpha, "mixup", cfg.MixupAlpha, "mixup α; 0: off")
	f.Float64Var(&cfg.CutmixAlpha, "cutmix", cfg.CutmixAlpha, "CutMix α; 0: off")
	f.Float64Var(&cfg.Prob, "mixup-prob", cfg.Prob, "probability of mixing a batch")
	f.Float64Var(&cfg.SwitchProb, "mixup-switch-prob", cfg.SwitchProb, "probability of CutMix instead of mixup when both are on")
	f.Float64Var(&cfg.LabelSmoothing, "smoothing", cfg.LabelSmoothing, "label smoothing")
	deitFlags(f, &cfg)
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if cfg.TrainData == "" {
		return fmt.Errorf("%w: --train-data is required: IDX images (with --train-labels), an ImageFolder directory or a CSV of path,label", errUsage)
	}
	if cfg.InitFrom != "" {
		if err := expectFamily(cfg.InitFrom, "vit"); err != nil {
			return err
		}
		if f.isSet("model") {
			return fmt.Errorf("%w: --model makes a new model; with --init-from the architecture is the checkpoint's (use --scratch for fresh weights)", errUsage)
		}
		cfg.Model = ""
	}
	cfg.WarmupSteps = f.warmup(cfg.WarmupSteps, cfg.MaxSteps)
	ctx, stop := signalContext()
	defer stop()
	res, err := finetune.RunClassifyImages(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.OutputDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps; validation accuracy %.4f, macro-F1 %.4f\n%v\n", res.Steps, res.Confusion.Accuracy(), res.Confusion.MacroF1(), res.Confusion)
	if res.ConfusionPNG != "" {
		fmt.Fprintf(stdout, "confusion matrix: %s\n", res.ConfusionPNG)
	}
	fmt.Fprintf(stdout, "throughput: training %.1f images/s, inference %.1f images/s; the steps waited %s for data over %d batches\n%s\n",
		res.TrainImagesPerSec, res.InferImagesPerSec, res.DataWait.Round(time.Millisecond), res.DataBatches, checkpointLine(res.Final, res.Best, res.BestStep))
	return nil
}

// runEvalViT is `zoo eval --checkpoint DIR --data DATA [--labels IDX]` for
// a ViT image classifier: accuracy, macro-F1, the confusion matrix (and
// its PNG with --confusion) and images/s.
func runEvalViT(args []string, stdout io.Writer) error {
	f := newFlags("zoo eval", "usage: zoo eval --checkpoint DIR --data DATA [--labels IDX] [flags]\n\nScores a ViT image classifier on labelled images (IDX images with --labels, an ImageFolder directory or a CSV of path,label): accuracy, macro-F1, the confusion matrix and images/s.")
	ckpt := f.String("checkpoint", "", "ViT image classifier checkpoint directory (config.json with id2label, model.safetensors, preprocessor_config.json)")
	data := f.String("data", "", "labelled images: IDX images file, ImageFolder directory or CSV of path,label")
	labels := f.String("labels", "", "IDX labels file of IDX --data")
	batch := f.Int("batch-size", 64, "images per batch")
	workers := f.Int("workers", 2, "goroutines that decode the images")
	pool := f.String("pool", "", "the pooling: cls or mean (default: the checkpoint's, saved with it; another is refused)")
	png := f.String("confusion", "", "also draw the confusion matrix to this PNG")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if *ckpt == "" || *data == "" {
		return fmt.Errorf("%w: give --checkpoint and --data (with --labels for IDX images)", errUsage)
	}
	ctx, stop := signalContext()
	defer stop()
	ev, err := finetune.EvalImages(ctx, *ckpt, *data, *labels, *batch, *workers, *pool)
	if err != nil {
		return err
	}
	n := 0
	for _, row := range ev.Confusion.Counts {
		for _, c := range row {
			n += c
		}
	}
	fmt.Fprintf(stdout, "accuracy %.4f, macro-F1 %.4f on %d images; %.1f images/s\n%v\n", ev.Confusion.Accuracy(), ev.Confusion.MacroF1(), n, ev.InferImagesPerSec, ev.Confusion)
	if *png != "" {
		if note := finetune.ConfusionPNGNote(len(ev.Confusion.Labels)); note != "" {
			fmt.Fprintf(stdout, "note: %s; %s not written\n", note, *png)
			return nil
		}
		if err := ev.Confusion.WritePNG(*png, fmt.Sprintf("confusion on %d images (rows: true; row-normalised)", n)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "confusion matrix: %s\n", *png)
	}
	return nil
}

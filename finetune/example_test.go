package finetune_test

import (
	"context"
	"fmt"
	"os"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/finetune"
	"github.com/d73a19ff/zoo/train"
)

// What zoo finetune vit warns about before training on a labelled image
// set: here four classes named, the fourth without images (the labels are
// not 0…3 dense), and the third with only two.
func ExampleLabelSurprises() {
	ids := []uint8{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 2, 2}
	imgs := &datasets.IDXImages{N: len(ids), Rows: 2, Cols: 2, Pix: make([]uint8, len(ids)*2*2)}
	set, err := datasets.NewIDXSet(imgs, ids, []string{"cat", "dog", "bird", "fish"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range finetune.LabelSurprises(set) {
		fmt.Println(s)
	}

	set, err = datasets.NewIDXSet(imgs, ids, nil) // names "0", "1", "2"
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(finetune.LabelSurprises(set))
	// Output:
	// 1 of its 4 classes has no images: "fish"; the labels are not 0…3 dense. A stray label (an IDX label 255 makes 256 classes) or too many --label-names is the usual cause; the model gets a head of 4 classes all the same
	// 1 class has very few images (the median class has 6): "bird" (2)
	// [1 class has very few images (the median class has 6): "2" (2)]
}

// The confusion matrix is drawn (confusion.png) up to 80 classes; past
// that, the note says why not.
func ExampleConfusionPNGNote() {
	fmt.Printf("%q\n", finetune.ConfusionPNGNote(10))
	fmt.Println(finetune.ConfusionPNGNote(1000))
	// Output:
	// ""
	// the confusion matrix is not drawn: 1000 classes, and its picture names each class on its axes, which stays readable up to 80; its numbers are printed
}

// A fine-tuning pipeline is a recipe on train.Run: RunClassify is this,
// with the confusion matrix in its result. The recipe's Args are the
// config's with the default output_dir filled in.
func ExampleClassifyRecipe() {
	ctx := context.Background()
	cfg := finetune.DefaultClassify()
	cfg.Checkpoint, cfg.TrainFile = "runs/gpt/checkpoints/final", "reviews.csv"
	r, err := finetune.NewClassifyRecipe(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := train.Run(ctx, r.Args(), r, os.Stdout)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d steps, validation accuracy %.3f\n", res.Steps, r.Confusion.Accuracy())
}

// Token classification (CoNLL tags) on train.Run; RunTokens is this.
func ExampleTokensRecipe() {
	ctx := context.Background()
	cfg := finetune.DefaultTokens()
	cfg.Checkpoint, cfg.TrainFile, cfg.OutputDir = "bert-base-cased", "train.conll", "runs/ner"
	r, err := finetune.NewTokensRecipe(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := train.Run(ctx, r.Args(), r, os.Stdout); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("model:", r.Scores, "baseline:", r.Baseline)
}

// SQuAD question answering on train.Run; RunQA is this.
func ExampleQARecipe() {
	ctx := context.Background()
	cfg := finetune.DefaultQA()
	cfg.Checkpoint, cfg.TrainFile, cfg.ValFile = "bert-base-uncased", "train-v1.1.json", "dev-v1.1.json"
	r, err := finetune.NewQARecipe(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := train.Run(ctx, r.Args(), r, os.Stdout); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("EM %.1f, F1 %.1f\n", r.Result.Scores.ExactMatch, r.Result.Scores.F1)
}

// ViT image classification on train.Run; RunClassifyImages is this. The
// recipe's data loader runs on workers: Close stops them.
func ExampleImagesRecipe() {
	ctx := context.Background()
	cfg := finetune.DefaultImages()
	cfg.TrainData, cfg.TrainLabels = "train-images-idx3-ubyte", "train-labels-idx1-ubyte"
	r, err := finetune.NewImagesRecipe(ctx, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	if _, err := train.Run(ctx, r.Args(), r, os.Stdout); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("accuracy %.3f at %.0f images/s\n", r.Result.Confusion.Accuracy(), r.Result.TrainImagesPerSec)
}

// DeiT's hard distillation: a DeiT student (class and distillation heads)
// learns from a trained ViT of the same labels, image size and channels.
func ExampleImagesConfig_distillation() {
	cfg := finetune.DefaultImages()
	cfg.TrainData, cfg.TrainLabels = "train-images-idx3-ubyte", "train-labels-idx1-ubyte"
	cfg.Teacher, cfg.Distillation = "runs/vit-teacher/checkpoints/final", finetune.DistillHard
	res, err := finetune.RunClassifyImages(context.Background(), cfg, os.Stdout)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("accuracy %.3f (the mean of the two heads)\n", res.Confusion.Accuracy())
}

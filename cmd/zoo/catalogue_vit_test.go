package main

// Issue 34's ViT cases: flags that were accepted or crashed, the pooling
// saved with the checkpoint, images of another height × width, and a
// confusion matrix of more classes than its picture draws.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/vit"
)

// vitFixture is a tiny ViT classifier of 8×8 grey images in 4×4 patches
// with labels (a, b by default), its preprocessor_config.json, an 8×8
// stripe PNG, IDX stripes and a tiny model config for finetune.
type vitFixture struct {
	ckpt, png, images, labels, model string
}

func newVitFixture(t *testing.T, labels ...string) vitFixture {
	t.Helper()
	if labels == nil {
		labels = []string{"a", "b"}
	}
	dir := t.TempDir()
	vc := vit.Fashion()
	vc.ImageSize, vc.NumHiddenLayers, vc.HiddenSize, vc.NumAttentionHeads, vc.IntermediateSize = 8, 1, 8, 2, 16
	vm, err := vit.New(vc, vit.StoreOption(layers.WithSeed(1)))
	require.NoError(t, err)
	clf, err := vit.NewForImageClassification(vm, labels)
	require.NoError(t, err)
	f := vitFixture{ckpt: filepath.Join(dir, "vit"), png: filepath.Join(dir, "x.png"), model: filepath.Join(dir, "tiny.json")}
	require.NoError(t, clf.Save(f.ckpt))
	proc := datasets.DefaultProcessorConfig()
	proc.Size = datasets.ImageSize{Height: 8, Width: 8}
	proc.ImageMean, proc.ImageStd = []float64{0.5}, []float64{0.5}
	require.NoError(t, proc.Save(f.ckpt))
	stripePNG(t, f.png, true)
	f.images, f.labels = stripeSet(t, dir, "train", 64, 1)
	write(t, f.model, `{"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16,
		"image_size": 8, "patch_size": 4, "num_channels": 1, "encoder_stride": 4}`)
	return f
}

// zoo runs the CLI in-process and returns its exit code, stdout and
// stderr, failing on a panic.
func zoo(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	require.NotContains(t, out.String()+errb.String(), "panic:")
	return code, out.String(), errb.String()
}

func TestViTBadFlags(t *testing.T) {
	f := newVitFixture(t)
	train := func(d string, extra ...string) []string {
		return append([]string{"finetune", "vit", "--model", f.model, "--train-data", f.images, "--train-labels", f.labels,
			"--run", filepath.Join(d, "run"), "--max-steps", "1", "--batch-size", "8"}, extra...)
	}
	for _, c := range []struct {
		name string
		args func(d string) []string
		msg  string
	}{
		{"mixup -1", func(d string) []string { return train(d, "--mixup", "-1") }, "mixup α -1: want 0 (off) or a positive finite number"},
		{"cutmix -0.5", func(d string) []string { return train(d, "--cutmix", "-0.5") }, "cutmix α -0.5"},
		{"mixup-prob 2", func(d string) []string { return train(d, "--mixup-prob", "2") }, "mixup_prob 2"},
		{"reprob 1.5", func(d string) []string { return train(d, "--reprob", "1.5") }, "erase probability 1.5"},
		{"hflip -1", func(d string) []string { return train(d, "--hflip", "-1") }, "flip probability -1"},
		{"crop-padding 1e9", func(d string) []string { return train(d, "--crop-padding", "1000000000") }, "padding 1000000000"},
		{"smoothing 1", func(d string) []string { return train(d, "--smoothing", "1") }, "smoothing 1"},
		{"image-std -1", func(d string) []string { return train(d, "--image-std", "-1") }, "image_std[0] is -1: a standard deviation must be positive"},
		{"image-std 0", func(d string) []string { return train(d, "--image-std", "0") }, "image_std[0] is 0"},
		{"image-mean nan", func(d string) []string { return train(d, "--image-mean", "nan") }, "image_mean[0] is NaN: want a finite number"},
		{"image-mean 4 values", func(d string) []string { return train(d, "--image-mean", "0.1,0.2,0.3,0.4") }, "image_mean has 4 values"},
		{"workers 1e9", func(d string) []string { return train(d, "--workers", "1000000000") }, "workers 1000000000 is more than 256"},
		{"pretrain workers 1e9", func(d string) []string {
			return []string{"pretrain", "vit", "--data", f.images, "--workers", "1000000000", "--run", filepath.Join(d, "run")}
		}, "workers 1000000000 is more than 256"},
		{"eval workers 1e9", func(string) []string {
			return []string{"eval", "--checkpoint", f.ckpt, "--data", f.images, "--labels", f.labels, "--workers", "1000000000"}
		}, "workers 1000000000 is more than 256"},
		{"classify another pooling", func(string) []string {
			return []string{"classify", "--checkpoint", f.ckpt, "--pool", "mean", f.png}
		}, "was trained with cls pooling"},
		{"classify --image-size not whole patches", func(string) []string {
			return []string{"classify", "--checkpoint", f.ckpt, "--image-size", "8x10", f.png}
		}, "multiples of patch_size 4"},
		{"classify --image-size nonsense", func(string) []string {
			return []string{"classify", "--checkpoint", f.ckpt, "--image-size", "wide", f.png}
		}, "want HxW"},
		{"classify --position-resample bilinear", func(string) []string {
			return []string{"classify", "--checkpoint", f.ckpt, "--image-size", "8x12", "--position-resample", "bilinear", f.png}
		}, "resample method"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			code, out, errb := zoo(t, c.args(d)...)
			require.NotEqual(t, 0, code, out)
			require.Contains(t, errb, c.msg)
			require.NotContains(t, errb, "needs image_mean and image_std")
		})
	}
}

// A billion workers once asked for a 16 GB channel: under a 2 GB address
// space limit the refusal comes before any allocation.
func TestViTWorkersUnderMemoryLimit(t *testing.T) {
	f := newVitFixture(t)
	d := t.TempDir()
	code, stderr := runLimited(t, 2048, "finetune", "vit", "--model", f.model, "--train-data", f.images, "--train-labels", f.labels,
		"--run", filepath.Join(d, "run"), "--max-steps", "1", "--batch-size", "8", "--workers", "1000000000")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "workers 1000000000 is more than 256")
	require.NotContains(t, stderr, "fatal error:")
}

// --image-std alone trains; the checkpoint pools by the mean, which zoo
// classify and zoo eval restore without being told and zoo inspect
// explains; zoo classify reads 8×12 images with interpolated positions.
func TestViTPoolSavedAndImageSize(t *testing.T) {
	f := newVitFixture(t)
	d := t.TempDir()
	run := filepath.Join(d, "run")
	code, out, errb := zoo(t, "finetune", "vit", "--model", f.model, "--train-data", f.images, "--train-labels", f.labels,
		"--run", run, "--max-steps", "2", "--batch-size", "8", "--image-std", "0.25", "--pool", "mean")
	require.Equal(t, 0, code, out+errb)
	final := filepath.Join(run, "checkpoints", "final")
	pc, err := datasets.ReadProcessorConfig(final)
	require.NoError(t, err)
	require.Equal(t, []float64{0.25}, pc.ImageStd)

	code, out, errb = zoo(t, "classify", "--checkpoint", final, "--json", f.png)
	require.Equal(t, 0, code, errb)
	withPool, out2, errb2 := zoo(t, "classify", "--checkpoint", final, "--json", "--pool", "mean", f.png)
	require.Equal(t, 0, withPool, errb2)
	require.Equal(t, out2, out, "the saved pooling is used without --pool")
	code, _, errb = zoo(t, "classify", "--checkpoint", final, "--pool", "cls", f.png)
	require.Equal(t, 1, code)
	require.Contains(t, errb, "was trained with mean pooling")

	code, out, errb = zoo(t, "eval", "--checkpoint", final, "--data", f.images, "--labels", f.labels)
	require.Equal(t, 0, code, errb)
	require.Contains(t, out, "accuracy")

	code, out, errb = zoo(t, "inspect", final)
	require.Equal(t, 0, code, errb)
	require.Contains(t, out, "ZooViTForImageClassificationMeanPooling")
	require.Contains(t, out, "ViTForImageClassification cannot represent it")

	// 8×12: a 2×3 grid of positions interpolated from the 2×2 one.
	att := filepath.Join(d, "att.png")
	code, out, errb = zoo(t, "classify", "--checkpoint", f.ckpt, "--image-size", "8x12", "--attention", att, f.png)
	require.Equal(t, 0, code, errb)
	require.Contains(t, out, "over 2×3 patches")
	require.Contains(t, out, "interpolated to a 2×3 patch grid (size")
	require.FileExists(t, att)
	for _, m := range []string{"hf", "timm"} {
		code, _, errb = zoo(t, "classify", "--checkpoint", f.ckpt, "--image-size", "12x8", "--position-resample", m, f.png)
		require.Equal(t, 0, code, errb)
	}
}

// More classes than the confusion picture draws: zoo eval --confusion
// says it is not drawn instead of failing after the work.
func TestViTEvalManyClasses(t *testing.T) {
	labels := make([]string, 90)
	for i := range labels {
		labels[i] = fmt.Sprintf("c%d", i)
	}
	f := newVitFixture(t, labels...)
	png := filepath.Join(t.TempDir(), "confusion.png")
	code, out, errb := zoo(t, "eval", "--checkpoint", f.ckpt, "--data", f.images, "--labels", f.labels, "--confusion", png)
	require.Equal(t, 0, code, errb)
	require.Contains(t, out, "the confusion matrix is not drawn: 90 classes")
	_, err := os.Stat(png)
	require.True(t, os.IsNotExist(err))
	require.True(t, strings.Contains(out, "accuracy"))
}

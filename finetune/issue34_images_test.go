package finetune

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/vit"
)

// An RGB model's preprocessor_config.json has one image_mean and
// image_std value per channel, as Hugging Face's ViTImageProcessor needs;
// --image-std alone keeps the default mean.
func TestClassifyImagesRGBProcessorPerChannel(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyImages(t, dir)
	root := filepath.Join(dir, "folder")
	folder(t, root, 8)
	cfg.TrainData, cfg.TrainLabels, cfg.ValData, cfg.ValLabels, cfg.BatchSize, cfg.MaxSteps = root, "", "", "", 4, 1
	cfg.NumChannels = 3
	cfg.ImageStd = []float64{0.25}
	var out bytes.Buffer
	res, err := RunClassifyImages(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	b, err := os.ReadFile(filepath.Join(res.Final, datasets.ProcessorConfigFile))
	require.NoError(t, err)
	var pc struct {
		Mean []float64 `json:"image_mean"`
		Std  []float64 `json:"image_std"`
	}
	require.NoError(t, json.Unmarshal(b, &pc))
	require.Equal(t, []float64{0.5, 0.5, 0.5}, pc.Mean)
	require.Equal(t, []float64{0.25, 0.25, 0.25}, pc.Std)
}

// Bad settings are refused before anything runs, each naming what is
// wrong.
func TestImagesConfigRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		set  func(*ImagesConfig)
		want string
	}{
		{func(c *ImagesConfig) { c.Workers = 1_000_000_000 }, "workers 1000000000 is more than 256"},
		{func(c *ImagesConfig) { c.MixupAlpha = -1 }, "mixup α -1: want 0 (off)"},
		{func(c *ImagesConfig) { c.CutmixAlpha = math.Inf(1) }, "cutmix α +Inf"},
		{func(c *ImagesConfig) { c.Prob = 2 }, "mixup_prob 2"},
		{func(c *ImagesConfig) { c.EraseProb = 1.5 }, "erase probability 1.5"},
		{func(c *ImagesConfig) { c.LabelSmoothing = -0.1 }, "smoothing -0.1"},
		{func(c *ImagesConfig) { c.ImageStd = []float64{-1} }, "image_std[0] is -1: a standard deviation must be positive"},
		{func(c *ImagesConfig) { c.ImageMean = []float64{math.NaN()} }, "image_mean[0] is NaN"},
		{func(c *ImagesConfig) { c.ImageMean = []float64{1, 2, 3, 4} }, "image_mean has 4 values"},
		// The cosine schedule clamped it to the steps, silently.
		{func(c *ImagesConfig) { c.WarmupSteps, c.MaxSteps = 50, 20 }, "warmup_steps 50 must be in [0, max_steps 20]"},
	} {
		cfg := tinyImages(t, dir)
		c.set(&cfg)
		_, err := RunClassifyImages(context.Background(), cfg, io.Discard)
		require.ErrorContains(t, err, c.want)
		require.NotContains(t, err.Error(), "needs image_mean and image_std")
	}
}

// A resume on data replaced under the same path is refused, naming it; the
// same files given by a relative path resume.
func TestClassifyImagesResumeChecksData(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyImages(t, dir)
	cfg.MaxSteps, cfg.SaveSteps, cfg.EvalSteps = 2, 1, 0
	_, err := RunClassifyImages(context.Background(), cfg, io.Discard)
	require.NoError(t, err)
	cfg.Resume = true
	wd, err := os.Getwd()
	require.NoError(t, err)
	rel := cfg
	for _, p := range []*string{&rel.TrainData, &rel.TrainLabels, &rel.ValData, &rel.ValLabels, &rel.Model} {
		*p, err = filepath.Rel(wd, *p)
		require.NoError(t, err)
	}
	var out bytes.Buffer
	_, err = RunClassifyImages(context.Background(), rel, &out)
	require.NoError(t, err, "the same files by a relative path: %s", out.String())

	// The same path, other images.
	writeStripes(t, dir, "train", 128, 8, 77)
	_, err = RunClassifyImages(context.Background(), cfg, io.Discard)
	require.ErrorContains(t, err, "train_data: the run has \"128 images of 2 classes, sha256 ")
}

// More classes than the picture draws: the run ends well with a note, and
// a stray label (one image labelled 89 among 0 and 1) is reported before
// training.
func TestClassifyImagesManyClasses(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyImages(t, dir)
	m, l := stripes(64, 8, 9)
	l[5] = 89
	cfg.TrainData, cfg.TrainLabels = filepath.Join(dir, "many-images-idx3-ubyte"), filepath.Join(dir, "many-labels-idx1-ubyte")
	require.NoError(t, datasets.WriteIDXImages(cfg.TrainData, m, false))
	require.NoError(t, datasets.WriteIDXLabels(cfg.TrainLabels, l, false))
	cfg.ValData, cfg.ValLabels = "", ""
	cfg.MaxSteps, cfg.EvalSteps = 1, 0
	var out bytes.Buffer
	res, err := RunClassifyImages(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Len(t, res.Confusion.Labels, 90)
	require.Empty(t, res.ConfusionPNG)
	s := out.String()
	require.Contains(t, s, "warning: train_data")
	require.Contains(t, s, "87 of its 90 classes have no images")
	require.Contains(t, s, "the confusion matrix is not drawn: 90 classes")
	require.Less(t, strings.Index(s, "have no images"), strings.Index(s, "vit classifier:"), "reported before training")
	require.Contains(t, s, `"89" (1)`)
}

func TestLabelSurprises(t *testing.T) {
	m, l := stripes(40, 4, 1)
	s, err := datasets.NewIDXSet(m, l, nil)
	require.NoError(t, err)
	require.Empty(t, LabelSurprises(s))
	l[0] = 2
	s, err = datasets.NewIDXSet(m, l, nil)
	require.NoError(t, err)
	w := LabelSurprises(s)
	require.Len(t, w, 1)
	require.Contains(t, w[0], `very few images (the median class has 19): "2" (1)`)
}

// A mean-pooling classifier is restored as such without --pool; another
// pooling is refused, and one image size the model does not have is read
// with its position embeddings interpolated.
func TestClassifyImagesPoolSaved(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyImages(t, dir)
	cfg.Pool, cfg.MaxSteps = "mean", 2
	var out bytes.Buffer
	res, err := RunClassifyImages(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.NotContains(t, out.String(), "give --pool mean")
	clf, _, err := vit.LoadPipeline(res.Final, vit.PipelineOptions{})
	require.NoError(t, err)
	require.Equal(t, vit.PoolMean, clf.Pooling)
	ev, err := EvalImages(context.Background(), res.Final, cfg.ValData, cfg.ValLabels, 7, 1, "")
	require.NoError(t, err)
	require.Equal(t, res.Confusion.Counts, ev.Confusion.Counts)
	_, err = EvalImages(context.Background(), res.Final, cfg.ValData, cfg.ValLabels, 7, 1, "cls")
	require.ErrorContains(t, err, "was trained with mean pooling")
	var c map[string]any
	b, err := os.ReadFile(filepath.Join(res.Final, models.ConfigFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &c))
	require.Equal(t, "mean", c["zoo_pooling"])

	// A checkpoint from before zoo_pooling (no key) takes the pooling it
	// is told.
	old := filepath.Join(dir, "old")
	require.NoError(t, os.CopyFS(old, os.DirFS(res.Final)))
	delete(c, "zoo_pooling")
	b, err = json.Marshal(c)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(old, models.ConfigFile), b, 0o644))
	clf, _, err = vit.LoadPipeline(old, vit.PipelineOptions{Pool: "mean"})
	require.NoError(t, err)
	require.Equal(t, vit.PoolMean, clf.Pooling)
	clf, _, err = vit.LoadPipeline(old, vit.PipelineOptions{})
	require.NoError(t, err)
	require.Equal(t, vit.PoolClass, clf.Pooling)

	// 8×12 images on an 8×8 model: a 2×3 grid of interpolated positions.
	clf, proc, err := vit.LoadPipeline(res.Final, vit.PipelineOptions{Size: datasets.ImageSize{Height: 8, Width: 12}})
	require.NoError(t, err)
	h, w := proc.OutputSize()
	require.Equal(t, [2]int{8, 12}, [2]int{h, w})
	p, err := clf.ProbabilitiesAt(make([]float32, proc.Len()), 1, h, w)
	require.NoError(t, err)
	require.Len(t, p[0], 2)
	// The same from a preprocessor_config.json of 12×8.
	pc, err := datasets.ReadProcessorConfig(old)
	require.NoError(t, err)
	pc.Size = datasets.ImageSize{Height: 12, Width: 8}
	require.NoError(t, pc.Save(old))
	clf, proc, err = vit.LoadPipeline(old, vit.PipelineOptions{})
	require.NoError(t, err)
	h, w = proc.OutputSize()
	require.Equal(t, [2]int{12, 8}, [2]int{h, w})
	_, err = clf.ProbabilitiesAt(make([]float32, proc.Len()), 1, h, w)
	require.NoError(t, err)
	_, _, err = vit.LoadPipeline(res.Final, vit.PipelineOptions{Size: datasets.ImageSize{Height: 8, Width: 10}})
	require.ErrorContains(t, err, "multiples of patch_size 4")
}

package finetune

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/vit"
)

// stripes are n grey size×size images: class 0 horizontal stripes, class 1
// vertical ones, of random phase and period 2 or 3, with noise.
func stripes(n, size int, seed uint64) (*datasets.IDXImages, []uint8) {
	r := rand.New(rand.NewPCG(seed, 5))
	m := &datasets.IDXImages{N: n, Rows: size, Cols: size, Pix: make([]uint8, n*size*size)}
	labels := make([]uint8, n)
	for i := range n {
		y := uint8(i % 2)
		labels[i] = y
		period, phase := 2+r.IntN(2), r.IntN(3)
		for a := range size {
			for b := range size {
				k := a // horizontal: rows alternate
				if y == 1 {
					k = b
				}
				v := 30 + r.IntN(40)
				if (k+phase)%period == 0 {
					v = 190 + r.IntN(60)
				}
				m.Pix[i*size*size+a*size+b] = uint8(v)
			}
		}
	}
	return m, labels
}

// writeStripes writes n stripe images of side size as IDX files in dir
// under prefix, returning the images' and the labels' paths.
func writeStripes(t testing.TB, dir, prefix string, n, size int, seed uint64) (string, string) {
	t.Helper()
	m, l := stripes(n, size, seed)
	ip, lp := filepath.Join(dir, prefix+"-images-idx3-ubyte.gz"), filepath.Join(dir, prefix+"-labels-idx1-ubyte.gz")
	require.NoError(t, datasets.WriteIDXImages(ip, m, true))
	require.NoError(t, datasets.WriteIDXLabels(lp, l, true))
	return ip, lp
}

// tinyModel writes a 1-layer, 16-wide ViT config for 8×8 grey images in
// 4×4 patches.
func tinyModel(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "tiny-vit.json")
	js := `{"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,
		"image_size": 8, "patch_size": 4, "num_channels": 1, "encoder_stride": 4}`
	require.NoError(t, os.WriteFile(p, []byte(js), 0o644))
	return p
}

// tinyImages is a fast config on stripes in dir: 128 training and 32
// validation images.
func tinyImages(t testing.TB, dir string) ImagesConfig {
	cfg := DefaultImages()
	cfg.Model = tinyModel(t, dir)
	cfg.TrainData, cfg.TrainLabels = writeStripes(t, dir, "train", 128, 8, 1)
	cfg.ValData, cfg.ValLabels = writeStripes(t, dir, "val", 32, 8, 2)
	cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.LearningRate, cfg.Workers = 16, 4, 1, 2, 3e-3, 2
	cfg.OutputDir = filepath.Join(dir, "run")
	return cfg
}

// A tiny ViT tells horizontal from vertical stripes within seconds; the
// run reports accuracy, macro-F1, throughput and the data waits, and its
// checkpoints hold preprocessor_config.json.
func TestClassifyImagesLearns(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyImages(t, dir)
	cfg.TrainData, cfg.TrainLabels = writeStripes(t, dir, "train-big", 512, 8, 3)
	cfg.ValData, cfg.ValLabels = writeStripes(t, dir, "val-big", 100, 8, 4)
	cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps = 200, 10, 100
	cfg.LabelNames = "horizontal,vertical"
	var out bytes.Buffer
	res, err := RunClassifyImages(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.GreaterOrEqual(t, res.Confusion.Accuracy(), 0.95, out.String())
	require.Equal(t, []string{"horizontal", "vertical"}, res.Confusion.Labels)
	require.Greater(t, res.TrainImagesPerSec, 0.0)
	require.Greater(t, res.InferImagesPerSec, 0.0)
	require.Equal(t, 200, res.DataBatches)
	require.Contains(t, out.String(), "steps waited over")
	require.FileExists(t, res.ConfusionPNG)
	pc, err := datasets.ReadProcessorConfig(res.Final)
	require.NoError(t, err)
	require.Equal(t, 8, pc.Size.Height)
	require.Len(t, pc.ImageMean, 1) // measured on the IDX set
	require.InDelta(t, 0.35, pc.ImageMean[0], 0.15)

	ev, err := EvalImages(context.Background(), res.Final, cfg.ValData, cfg.ValLabels, 7, 1, "")
	require.NoError(t, err)
	require.Equal(t, res.Confusion.Counts, ev.Confusion.Counts)

	// A backbone without a head cannot classify: the error says what to do.
	m, err := vit.New(vit.Fashion())
	require.NoError(t, err)
	bare := filepath.Join(dir, "bare")
	require.NoError(t, m.Save(bare))
	_, err = EvalImages(context.Background(), bare, cfg.ValData, cfg.ValLabels, 7, 1, "")
	require.ErrorContains(t, err, "has no classifier head")
}

// stoppedAtStep3 makes dir/run2 the run directory of the run in runDir
// as it was after step 3 (its step-3 checkpoint and run.json), and
// returns it.
func stoppedAtStep3(t *testing.T, dir, runDir string) string {
	t.Helper()
	run2 := filepath.Join(dir, "run2")
	require.NoError(t, os.MkdirAll(filepath.Join(run2, "checkpoints"), 0o755))
	require.NoError(t, os.CopyFS(filepath.Join(run2, "checkpoints", "step-000003"), os.DirFS(filepath.Join(runDir, "checkpoints", "step-000003"))))
	js, err := os.ReadFile(filepath.Join(runDir, "run.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(run2, "run.json"), js, 0o644))
	return run2
}

// readWeights is the checkpoint's model.safetensors.
func readWeights(t *testing.T, ckpt string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ckpt, models.WeightsFile))
	require.NoError(t, err)
	return b
}

// 2N steps equal N steps, a resume, and N more, bit for bit, with
// augmentation and mixup on and two workers.
func TestClassifyImagesResumeExact(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyImages(t, dir)
	cfg.MaxSteps, cfg.SaveSteps, cfg.EvalSteps = 6, 3, 0
	cfg.Padding, cfg.FlipProb, cfg.EraseProb, cfg.MixupAlpha, cfg.CutmixAlpha = 1, 0.5, 0.5, 0.8, 1
	cfg.Augment.Scale = [2]float64{0.5, 1}
	full, err := RunClassifyImages(context.Background(), cfg, io.Discard)
	require.NoError(t, err)

	// A second run that stopped after step 3: its run directory as the
	// first's was then.
	run2 := stoppedAtStep3(t, dir, cfg.OutputDir)
	cfg.OutputDir, cfg.Resume, cfg.Workers = run2, true, 1 // the workers do not matter
	var out bytes.Buffer
	resumed, err := RunClassifyImages(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Contains(t, out.String(), "at step 3")
	a := readWeights(t, full.Final)
	require.True(t, bytes.Equal(a, readWeights(t, resumed.Final)), "the resumed run's weights differ")
	require.Equal(t, full.Confusion.Counts, resumed.Confusion.Counts)

	// A resume with other settings is refused, naming them, unless forced.
	cfg.FlipProb = 0.25
	_, err = RunClassifyImages(context.Background(), cfg, io.Discard)
	require.ErrorContains(t, err, "hflip: the run has 0.5, now 0.25")
	cfg.Force = true
	var forced bytes.Buffer
	_, err = RunClassifyImages(context.Background(), cfg, &forced)
	require.NoError(t, err)
	require.Contains(t, forced.String(), "resume: --force")
	cfg.FlipProb, cfg.Force = 0.5, false

	// And a run with other augmentations differs: the comparison can fail.
	cfg.OutputDir, cfg.Resume, cfg.Seed = filepath.Join(dir, "run3"), false, 2
	other, err := RunClassifyImages(context.Background(), cfg, io.Discard)
	require.NoError(t, err)
	require.False(t, bytes.Equal(a, readWeights(t, other.Final)))
}

// A checkpoint fine-tunes at a new image size (28 → 32) with its position
// embeddings resampled, on another label set, and --scratch keeps its
// architecture at that size with fresh weights.
func TestClassifyImagesNewResolution(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyImages(t, dir)
	cfg.ImageSize = 28
	cfg.TrainData, cfg.TrainLabels = writeStripes(t, dir, "train28", 64, 28, 1)
	cfg.ValData, cfg.ValLabels = writeStripes(t, dir, "val28", 16, 28, 2)
	first, err := RunClassifyImages(context.Background(), cfg, io.Discard)
	require.NoError(t, err)

	cfg.InitFrom, cfg.Model, cfg.ImageSize = first.Final, "", 32
	cfg.LabelNames = "h,v"
	cfg.OutputDir = filepath.Join(dir, "run-32")
	var out bytes.Buffer
	res, err := RunClassifyImages(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Contains(t, out.String(), "resampled from a 7×7 grid (image_size 28) to 8×8 (image_size 32) by hf")
	require.Contains(t, out.String(), "classifier.weight")
	pc, err := datasets.ReadProcessorConfig(res.Final)
	require.NoError(t, err)
	require.Equal(t, 32, pc.Size.Width)
	var c struct {
		ImageSize int               `json:"image_size"`
		ID2Label  map[string]string `json:"id2label"`
	}
	js, err := os.ReadFile(filepath.Join(res.Final, models.ConfigFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &c))
	require.Equal(t, 32, c.ImageSize)
	require.Equal(t, "v", c.ID2Label["1"])

	cfg.Scratch, cfg.OutputDir, cfg.LabelFraction = true, filepath.Join(dir, "run-32-scratch"), 0.5
	out.Reset()
	_, err = RunClassifyImages(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Contains(t, out.String(), "labels: 32 of 64 training images kept (label_fraction 0.5, stratified by class)")
	require.Contains(t, out.String(), "fresh weights (scratch")
	require.Contains(t, out.String(), "32×32 images in a 8×8 grid")
}

func writePNG(t testing.TB, path string, w, h int, v uint8) {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = v + uint8(i%7)
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
}

// folder writes an ImageFolder of two classes, a and b, of n 8×8 PNGs each.
func folder(t testing.TB, root string, n int) {
	for _, c := range []string{"a", "b"} {
		for i := range n {
			writePNG(t, filepath.Join(root, c, string(rune('0'+i))+".png"), 8, 8, uint8(40*i))
		}
	}
}

// Every bad input is an error naming what is wrong, never a panic.
func TestClassifyImagesBadInput(t *testing.T) {
	dir := t.TempDir()
	base := tinyImages(t, dir)
	base.MaxSteps = 1
	imgs, lbls := base.TrainData, base.TrainLabels
	_ = color.Gray{}
	tests := []struct {
		name string
		edit func(t *testing.T, d string, c *ImagesConfig)
		want string
	}{
		{"corrupt image", func(t *testing.T, d string, c *ImagesConfig) {
			folder(t, d, 4)
			b, _ := os.ReadFile(filepath.Join(d, "a", "1.png"))
			require.NoError(t, os.WriteFile(filepath.Join(d, "a", "1.png"), b[:len(b)/2], 0o644))
			c.TrainData, c.TrainLabels, c.ValData, c.ValLabels, c.BatchSize = d, "", d, "", 2
		}, "1.png: corrupt or truncated"},
		{"unsupported format", func(t *testing.T, d string, c *ImagesConfig) {
			folder(t, d, 4)
			require.NoError(t, os.WriteFile(filepath.Join(d, "b", "2.png"), []byte("GIF87 or not, this is text"), 0o644))
			c.TrainData, c.TrainLabels, c.ValData, c.ValLabels, c.BatchSize = d, "", d, "", 2
		}, "2.png: unsupported format"},
		{"image smaller than a patch", func(t *testing.T, d string, c *ImagesConfig) {
			folder(t, d, 4)
			writePNG(t, filepath.Join(d, "a", "tiny.png"), 3, 8, 9)
			c.TrainData, c.TrainLabels, c.ValData, c.ValLabels, c.BatchSize = d, "", d, "", 2
		}, "tiny.png: 3×8 pixels is smaller than the model's patch of 4×4"},
		{"image size not divisible by the patch", func(t *testing.T, d string, c *ImagesConfig) {
			c.ImageSize = 10
		}, "image_size 10 is not divisible by patch_size 4"},
		{"label id out of range", func(t *testing.T, d string, c *ImagesConfig) {
			c.LabelNames = "only"
		}, "label 1 of item 1 is out of range for 1 class names"},
		{"label out of range in a csv", func(t *testing.T, d string, c *ImagesConfig) {
			writePNG(t, filepath.Join(d, "x.png"), 8, 8, 1)
			require.NoError(t, os.WriteFile(filepath.Join(d, "l.csv"), []byte("path,label\nx.png,0\nx.png,7\n"), 0o644))
			c.TrainData, c.TrainLabels, c.LabelNames = filepath.Join(d, "l.csv"), "", "a,b"
		}, "l.csv:3: label id 7 is out of range"},
		{"empty class folder", func(t *testing.T, d string, c *ImagesConfig) {
			folder(t, d, 2)
			require.NoError(t, os.MkdirAll(filepath.Join(d, "c"), 0o755))
			c.TrainData, c.TrainLabels = d, ""
		}, `class folder "c" has no images`},
		{"bad IDX magic", func(t *testing.T, d string, c *ImagesConfig) {
			p := filepath.Join(d, "bad-idx3-ubyte")
			require.NoError(t, os.WriteFile(p, []byte{0, 0, 8, 1, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 8}, 0o644))
			c.TrainData = p
		}, "bad-idx3-ubyte"},
		{"IDX counts that do not match", func(t *testing.T, d string, c *ImagesConfig) {
			_, l := writeStripes(t, d, "short", 100, 8, 3)
			c.TrainData, c.TrainLabels = imgs, l
		}, "128 images but 100 labels"},
		{"truncated IDX", func(t *testing.T, d string, c *ImagesConfig) {
			m, _ := stripes(4, 8, 1)
			p := filepath.Join(d, "trunc-idx3-ubyte")
			require.NoError(t, datasets.WriteIDXImages(p, m, false))
			b, _ := os.ReadFile(p)
			require.NoError(t, os.WriteFile(p, b[:len(b)-10], 0o644))
			c.TrainData = p
		}, "trunc-idx3-ubyte"},
		{"IDX images without labels", func(t *testing.T, d string, c *ImagesConfig) {
			c.TrainLabels = ""
		}, "give its IDX labels file too (train_labels)"},
		{"checkpoint of another family", func(t *testing.T, d string, c *ImagesConfig) {
			require.NoError(t, os.WriteFile(filepath.Join(d, "config.json"), []byte(`{"model_type": "bert"}`), 0o644))
			c.InitFrom, c.Model = d, ""
		}, "another model family"},
		{"unknown preset", func(t *testing.T, d string, c *ImagesConfig) { c.Model = "huge" }, `model "huge"`},
		{"bad schedule", func(t *testing.T, d string, c *ImagesConfig) { c.LRSchedulerType = "step" }, "lr_schedule"},
		{"bad pool", func(t *testing.T, d string, c *ImagesConfig) { c.Pool = "max" }, `pool "max"`},
		{"bad augmentation", func(t *testing.T, d string, c *ImagesConfig) { c.FlipProb = 2 }, "flip probability 2"},
		{"bad label fraction", func(t *testing.T, d string, c *ImagesConfig) { c.LabelFraction = 0 }, "label_fraction 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			c := base
			c.TrainData, c.TrainLabels = imgs, lbls
			c.OutputDir = filepath.Join(t.TempDir(), "run")
			tc.edit(t, d, &c)
			_, err := RunClassifyImages(context.Background(), c, io.Discard)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// An ImageFolder trains with a held-out split, and a CSV of path,label
// validates it; the class names are the folders'.
func TestClassifyImagesFolderAndCSV(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyImages(t, dir)
	root := filepath.Join(dir, "folder")
	folder(t, root, 8)
	cfg.TrainData, cfg.TrainLabels, cfg.ValData, cfg.ValLabels, cfg.BatchSize, cfg.MaxSteps = root, "", "", "", 4, 2
	var out bytes.Buffer
	res, err := RunClassifyImages(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	require.Equal(t, []string{"a", "b"}, res.Confusion.Labels)
	require.Contains(t, out.String(), "14 training and 2 validation images of 2 classes")

	csv := filepath.Join(dir, "val.csv")
	require.NoError(t, os.WriteFile(csv, []byte("path,label\nfolder/b/1.png,b\nfolder/a/2.png,a\nfolder/b/3.png,b\n"), 0o644))
	cfg.ValData, cfg.OutputDir = csv, filepath.Join(dir, "run-csv")
	out.Reset()
	res, err = RunClassifyImages(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	n := 0
	for _, row := range res.Confusion.Counts {
		for _, c := range row {
			n += c
		}
	}
	require.Equal(t, 3, n)
	ev, err := EvalImages(context.Background(), res.Final, csv, "", 2, 1, "")
	require.NoError(t, err)
	require.Equal(t, res.Confusion.Counts, ev.Confusion.Counts)
}

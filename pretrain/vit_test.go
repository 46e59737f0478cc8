package pretrain

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/vit"
)

// stripes writes n 8×8 grey images of stripes as an IDX images file:
// horizontal or vertical lines one pixel wide, at a random phase, with a
// random bright and dark level. A masked autoencoder tells the
// orientation, phase and levels from any patch it sees; the mean predictor
// knows none of them.
func stripes(t *testing.T, n int) string {
	path, _ := stripesLabelled(t, n)
	return path
}

// stripesLabelled is stripes with the orientations (1 vertical) as labels.
func stripesLabelled(t *testing.T, n int) (string, []int) {
	t.Helper()
	labels := make([]int, n)
	r := rand.New(rand.NewPCG(7, 8))
	m := &datasets.IDXImages{N: n, Rows: 8, Cols: 8, Pix: make([]uint8, n*64)}
	for i := 0; i < n; i++ {
		vertical, phase := r.IntN(2) == 0, r.IntN(2)
		if vertical {
			labels[i] = 1
		}
		hi, lo := uint8(150+r.IntN(100)), uint8(r.IntN(100))
		for y := 0; y < 8; y++ {
			for x := 0; x < 8; x++ {
				k := y
				if vertical {
					k = x
				}
				if (k+phase)%2 == 0 {
					m.Pix[i*64+y*8+x] = hi
				} else {
					m.Pix[i*64+y*8+x] = lo
				}
			}
		}
	}
	path := filepath.Join(t.TempDir(), "stripes-images-idx3-ubyte")
	require.NoError(t, datasets.WriteIDXImages(path, m, false))
	return path, labels
}

// tinyMAE is a small MAE pretraining on 8×8 images: 16 patches of 2×2, 4
// seen.
func tinyMAE(t *testing.T, data string) MAEConfig {
	cfg := DefaultMAE()
	cfg.Data, cfg.OutputDir = data, filepath.Join(t.TempDir(), "run")
	m := cfg.Model
	m.HiddenSize, m.NumHiddenLayers, m.NumAttentionHeads, m.IntermediateSize = 32, 2, 4, 64
	m.ImageSize, m.PatchSize = 8, 2
	m.DecoderHiddenSize, m.DecoderNumHiddenLayers, m.DecoderNumAttentionHeads, m.DecoderIntermediateSize = 32, 1, 4, 64
	cfg.Model = m
	cfg.Processor.Size = datasets.ImageSize{Height: 8, Width: 8}
	cfg.Processor.ImageMean, cfg.Processor.ImageStd = []float64{0.5}, []float64{0.5}
	cfg.Augment = datasets.Augment{FlipProb: 0.5} // a crop would blur 8×8 stripes
	cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.LearningRate = 32, 200, 10, 3e-3
	cfg.EvalSteps, cfg.SaveSteps, cfg.EvalBatches, cfg.ValFraction, cfg.Pictures, cfg.Workers = 100, 100, 2, 0.15, 4, 1
	return cfg
}

// A tiny MAE learns to reconstruct masked stripes: its held-out
// masked-patch MSE falls well below the mean predictor's within 200 steps;
// each evaluation draws the reconstruction grid, and the checkpoint is a
// ViTMAEForPreTraining with its processor.
func TestRunViTMAELearns(t *testing.T) {
	cfg := tinyMAE(t, stripes(t, 480))
	began := time.Now()
	var out bytes.Buffer
	res, err := RunViTMAE(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())
	t.Logf("%d steps in %s: held-out MSE %.4f, mean predictor %.4f", res.Steps, time.Since(began).Round(time.Millisecond), res.ValLoss, res.BaselineMSE)
	require.Greater(t, res.BaselineMSE, 0.2)
	require.Less(t, res.ValLoss, 0.3*res.BaselineMSE, out.String())
	require.Contains(t, out.String(), "mean-predictor MSE")

	for _, name := range []string{"reconstructions.png", "reconstructions-step-000100.png", "reconstructions-step-000200.png"} {
		f, err := os.Open(filepath.Join(cfg.OutputDir, name))
		require.NoError(t, err, name)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err)
		// 4 images of 8×8 scaled by 14, 4 rows, gaps of 4.
		require.Equal(t, 4*(8*14+4)+4, img.Bounds().Dx(), name)
		require.Equal(t, 4*(8*14+4)+4, img.Bounds().Dy(), name)
	}
	require.Equal(t, filepath.Join(cfg.OutputDir, "reconstructions.png"), res.Picture)
	for _, f := range []string{models.ConfigFile, models.WeightsFile, datasets.ProcessorConfigFile} {
		require.FileExists(t, filepath.Join(res.Final, f))
	}
	m, _, err := vit.LoadViTMAEForPreTraining(res.Final)
	require.NoError(t, err)
	require.Equal(t, cfg.Model.DecoderHiddenSize, m.Config.DecoderHiddenSize)
	// The fine-tuning of this checkpoint (finetune.ImageTask) is checked
	// by cmd/zoo's TestMAEPretrainThenImageTask: pretrain never imports
	// finetune.
}

// A run stopped at step 10 and resumed to 20 ends with the weights of a
// run of 20 steps straight: the images, augmentations and masks are those
// of the same (seed, epoch, index). The schedule is constant, so that it
// does not depend on max_iters.
func TestRunViTMAEResumeExact(t *testing.T) {
	data := stripes(t, 200)
	base := tinyMAE(t, data)
	base.Model.NumHiddenLayers, base.BatchSize = 1, 16
	base.WarmupSteps, base.MinLR, base.EvalBatches, base.Pictures = 0, base.LearningRate, 1, 2
	base.MaxSteps, base.EvalSteps, base.SaveSteps = 20, 10, 10

	straight := base
	straight.OutputDir = filepath.Join(t.TempDir(), "straight")
	a, err := RunViTMAE(context.Background(), straight, io.Discard)
	require.NoError(t, err)

	split := base
	split.OutputDir = filepath.Join(t.TempDir(), "split")
	split.MaxSteps = 10
	_, err = RunViTMAE(context.Background(), split, io.Discard)
	require.NoError(t, err)
	split.MaxSteps, split.Resume = 20, true
	var out bytes.Buffer
	b, err := RunViTMAE(context.Background(), split, &out)
	require.NoError(t, err)
	require.Contains(t, out.String(), "resuming from")
	require.Equal(t, a.ValLoss, b.ValLoss)

	ma, _, err := vit.LoadViTMAEForPreTraining(a.Final)
	require.NoError(t, err)
	mb, _, err := vit.LoadViTMAEForPreTraining(b.Final)
	require.NoError(t, err)
	for _, p := range ma.Store.Params() {
		q, ok := mb.Store.Param(p.Name)
		require.True(t, ok)
		require.Equal(t, p.Value.Data(), q.Value.Data(), p.Name)
	}

	// A resume with another model is refused, naming the field.
	changed := split
	changed.Model.DecoderHiddenSize = 16
	changed.MaxSteps = 30
	_, err = RunViTMAE(context.Background(), changed, io.Discard)
	require.ErrorContains(t, err, "model.decoder_hidden_size")
}

func TestMAEConfigErrors(t *testing.T) {
	data := stripes(t, 40)
	for _, c := range []struct {
		edit func(*MAEConfig)
		want string
	}{
		{func(c *MAEConfig) { c.Data = "" }, "no data"},
		{func(c *MAEConfig) { c.Data = filepath.Join(t.TempDir(), "missing") }, "no such file"},
		{func(c *MAEConfig) { c.Model.MaskRatio = 1 }, "mask_ratio"},
		{func(c *MAEConfig) { c.Processor.Size = datasets.ImageSize{Height: 28, Width: 28} }, "processor's size 28×28 is not the model's image_size 8"},
		{func(c *MAEConfig) { c.WarmupSteps = c.MaxSteps }, "warmup_steps"},
		{func(c *MAEConfig) { c.LearningRate, c.BaseLR = 0, 0 }, "learning rate"},
		{func(c *MAEConfig) { c.ValFraction = 0 }, "val_fraction"},
		{func(c *MAEConfig) { c.BatchSize = 64 }, "validation split holds 6 images, fewer than a batch of 64"},
	} {
		cfg := tinyMAE(t, data)
		c.edit(&cfg)
		_, err := RunViTMAE(context.Background(), cfg, io.Discard)
		require.ErrorContains(t, err, c.want)
	}
	// Bad bytes as IDX.
	bad := filepath.Join(t.TempDir(), "bad.idx")
	require.NoError(t, os.WriteFile(bad, []byte("not an idx file"), 0o644))
	_, err := OpenImages(bad, "")
	require.ErrorContains(t, err, "IDX images file")
}

func TestReadMAEConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"batch_size": 8, "model": {"mask_ratio": 0.5, "norm_pix_loss": true}}`), 0o644))
	cfg, err := ReadMAEConfig(path, DefaultMAE())
	require.NoError(t, err)
	require.Equal(t, 8, cfg.BatchSize)
	require.Equal(t, 0.5, cfg.Model.MaskRatio)
	require.Equal(t, 128, cfg.Model.HiddenSize, "the rest of the model section keeps the preset's values")
	require.True(t, cfg.Model.NormPixLoss)
	require.Equal(t, 1.5e-3*8/256, cfg.PeakLR(), "MAE's linear scaling rule")
	require.NoError(t, os.WriteFile(path, []byte(`{"batch": 8}`), 0o644))
	_, err = ReadMAEConfig(path, DefaultMAE())
	require.ErrorContains(t, err, `unknown field "batch"`)
	require.NoError(t, os.WriteFile(path, []byte(`{"model": {"qkv_bias": false}}`), 0o644))
	cfg, err = ReadMAEConfig(path, DefaultMAE())
	if err == nil {
		cfg.Data = path
		err = cfg.Validate()
	}
	require.ErrorContains(t, err, "qkv_bias")
	b, err := json.Marshal(DefaultMAE())
	require.NoError(t, err)
	require.Contains(t, string(b), `"blr":0.0015`)
}

package main

import (
	"bytes"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/vit"
)

// maeIDX writes n random 28×28 grey "clothes" (a bright rectangle on
// black) and their labels as IDX files, as Fashion-MNIST ships them.
func maeIDX(t *testing.T, dir string, n int) (images, labels string) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	m := &datasets.IDXImages{N: n, Rows: 28, Cols: 28, Pix: make([]uint8, n*28*28)}
	ids := make([]uint8, n)
	for i := 0; i < n; i++ {
		x0, y0 := r.IntN(10), r.IntN(10)
		x1, y1 := x0+8+r.IntN(10), y0+8+r.IntN(10)
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				m.Pix[i*784+y*28+x] = uint8(120 + r.IntN(120))
			}
		}
		ids[i] = uint8(i % 10)
	}
	images, labels = filepath.Join(dir, "train-images-idx3-ubyte.gz"), filepath.Join(dir, "train-labels-idx1-ubyte.gz")
	require.NoError(t, datasets.WriteIDXImages(images, m, true))
	require.NoError(t, datasets.WriteIDXLabels(labels, ids, true))
	return images, labels
}

// pretrainTinyMAE runs `zoo pretrain vit` for 6 steps, then resumes it to
// 10, on IDX files, and returns the final checkpoint: the start of the
// MAE → fine-tune → classify CLI test.
func pretrainTinyMAE(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	images, labels := maeIDX(t, dir, 96)
	runDir := filepath.Join(dir, "run")
	flags := []string{"pretrain", "vit", "--data", images, "--labels", labels, "--model", "fashion", "--run", runDir,
		"--batch-size", "8", "--learning-rate", "1e-3", "--warmup-steps", "2", "--eval-interval", "3", "--save-interval", "3",
		"--eval-batches", "1", "--val-fraction", "0.1", "--pictures", "3", "--norm-pix-loss", "--mask-ratio", "0.5", "--seed", "7"}
	var out, errb bytes.Buffer
	code := run(append(flags, "--max-steps", "6"), &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "done: 6 steps")
	require.Contains(t, out.String(), "24 seen (mask_ratio 0.5), norm_pix_loss true")
	out.Reset()
	code = run(append(flags, "--max-steps", "10", "--resume"), &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "resuming from")
	require.Contains(t, out.String(), "done: 10 steps")
	for _, name := range []string{"reconstructions.png", "reconstructions-step-000003.png", "reconstructions-step-000009.png", "reconstructions-step-000010.png"} {
		f, err := os.Open(filepath.Join(runDir, name))
		require.NoError(t, err, name)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err, name)
		require.Equal(t, 3*(28*4+4)+4, img.Bounds().Dx(), "3 images of 28×28 drawn ×4")
		require.Equal(t, 4*(28*4+4)+4, img.Bounds().Dy(), "4 rows")
	}
	final := filepath.Join(runDir, "checkpoints", "final")
	for _, f := range []string{"config.json", "model.safetensors", "preprocessor_config.json"} {
		require.FileExists(t, filepath.Join(final, f))
	}
	return final
}

// The MAE checkpoint describes itself, and its encoder loads into a ViT
// classifier with the decoder dropped and named.
func TestViTPretrainMAE(t *testing.T) {
	ckpt := pretrainTinyMAE(t)
	var out, errb bytes.Buffer
	code := run([]string{"inspect", ckpt}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "ViTMAEForPreTraining: a decoder 64 wide, 2 layers")
	require.Contains(t, out.String(), "decoder.mask_token")

	c, r, err := vit.LoadForImageClassification(ckpt, models.WithLabels(datasets.FashionMNISTLabels...))
	require.NoError(t, err)
	want := vit.Fashion()
	want.ID2Label = c.Config.ID2Label
	require.Equal(t, want, c.Config, "the Fashion encoder")
	require.Equal(t, []string{"classifier.weight", "classifier.bias"}, r.Created)
	require.Contains(t, r.Dropped, "decoder.decoder_pred.weight")
	for _, k := range r.Dropped {
		require.True(t, strings.HasPrefix(k, "decoder."), "only the decoder is dropped, not %s", k)
	}
	m, _, err := vit.LoadViTMAEForPreTraining(ckpt)
	require.NoError(t, err)
	for _, name := range []string{"vit.encoder.layer.5.output.dense.weight", "vit.layernorm.weight", "vit.embeddings.position_embeddings"} {
		p, ok := c.Store.Param(name)
		require.True(t, ok, name)
		var q any
		if mp, ok := m.Store.Param(name); ok {
			q = mp.Value.Data()
		} else {
			for _, b := range m.Store.Buffers() {
				if b.Name == name {
					q = b.Value.Data()
				}
			}
		}
		require.Equal(t, q, p.Value.Data(), name)
	}
}

func TestViTPretrainErrors(t *testing.T) {
	dir := t.TempDir()
	images, _ := maeIDX(t, dir, 20)
	short := filepath.Join(dir, "short-labels-idx1-ubyte")
	require.NoError(t, datasets.WriteIDXLabels(short, make([]uint8, 5), false))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pretrain", "vit"}, "no data"},
		{[]string{"pretrain", "vit", "--data", images, "--model", "huge"}, `--model "huge"`},
		{[]string{"pretrain", "vit", "--data", images, "--mask-ratio", "1"}, "mask_ratio 1"},
		{[]string{"pretrain", "vit", "--data", images, "--labels", short, "--run", filepath.Join(dir, "r")}, "20 images but 5 labels"},
		{[]string{"pretrain", "vit", "--data", short, "--run", filepath.Join(dir, "r")}, "IDX images file"},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		require.NotEqual(t, 0, code, c.args)
		require.Contains(t, errb.String(), c.want, c.args)
	}
}

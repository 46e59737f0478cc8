package main

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/datasets"
)

// stripeSet writes n 8×8 grey IDX images in dir, horizontal stripes for
// label 0 and vertical ones for label 1, and returns the two files.
func stripeSet(t *testing.T, dir, prefix string, n int, seed uint64) (string, string) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	m := &datasets.IDXImages{N: n, Rows: 8, Cols: 8, Pix: make([]uint8, n*64)}
	labels := make([]uint8, n)
	for i := range n {
		labels[i] = uint8(i % 2)
		for a := range 8 {
			for b := range 8 {
				k := a
				if i%2 == 1 {
					k = b
				}
				v := 20 + r.IntN(40)
				if k%2 == 0 {
					v = 200 + r.IntN(50)
				}
				m.Pix[i*64+a*8+b] = uint8(v)
			}
		}
	}
	ip, lp := filepath.Join(dir, prefix+"-images-idx3-ubyte.gz"), filepath.Join(dir, prefix+"-labels-idx1-ubyte.gz")
	require.NoError(t, datasets.WriteIDXImages(ip, m, true))
	require.NoError(t, datasets.WriteIDXLabels(lp, labels, true))
	return ip, lp
}

// stripePNG writes one 8×8 stripe image as a PNG.
func stripePNG(t *testing.T, path string, vertical bool) {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 8, 8))
	for a := range 8 {
		for b := range 8 {
			k := a
			if vertical {
				k = b
			}
			if k%2 == 0 {
				img.Pix[a*8+b] = 230
			}
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// zoo finetune vit trains from scratch on IDX files, zoo eval scores the
// checkpoint, and zoo classify prints the top labels and draws the
// attention rollout; bad input is an error naming it.
func TestViTFinetuneEvalClassify(t *testing.T) {
	dir := t.TempDir()
	trainImgs, trainLabels := stripeSet(t, dir, "train", 64, 1)
	valImgs, valLabels := stripeSet(t, dir, "val", 20, 2)
	model := filepath.Join(dir, "tiny.json")
	require.NoError(t, os.WriteFile(model, []byte(`{"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
		"intermediate_size": 32, "image_size": 8, "patch_size": 4, "num_channels": 1}`), 0o644))
	run1 := filepath.Join(dir, "run")
	args := []string{"finetune", "vit", "--model", model, "--train-data", trainImgs, "--train-labels", trainLabels,
		"--validation-data", valImgs, "--validation-labels", valLabels, "--label-names", "horizontal,vertical",
		"--max-steps", "40", "--batch-size", "8", "--learning-rate", "0.003", "--eval-interval", "20",
		"--crop-padding", "1", "--reprob", "0.25", "--mixup", "0.2", "--workers", "2", "--run", run1}
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(args, &out, &errb), "%s\n%s", errb.String(), out.String())
	for _, want := range []string{"done: 40 steps", " img/s", "macro-F1", "confusion.png", "images/s", "random crop with 1 px padding", "mixup α 0.2", "steps waited over"} {
		require.Contains(t, out.String(), want)
	}
	final := filepath.Join(run1, "checkpoints", "final")
	require.FileExists(t, filepath.Join(final, datasets.ProcessorConfigFile))
	require.FileExists(t, filepath.Join(run1, "confusion.png"))

	// eval
	out.Reset()
	confPNG := filepath.Join(dir, "conf.png")
	require.Equal(t, 0, run([]string{"eval", "--checkpoint", final, "--data", valImgs, "--labels", valLabels, "--confusion", confPNG}, &out, &errb), errb.String())
	require.Contains(t, out.String(), "on 20 images")
	require.Contains(t, out.String(), "vertical")
	require.FileExists(t, confPNG)

	// classify, with the attention overlay of two images
	h, v := filepath.Join(dir, "h.png"), filepath.Join(dir, "v.png")
	stripePNG(t, h, false)
	stripePNG(t, v, true)
	att := filepath.Join(dir, "att.png")
	out.Reset()
	require.Equal(t, 0, run([]string{"classify", "--checkpoint", final, "--top-k", "2", "--attention", att, h, v}, &out, &errb), errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 7, out.String()) // 2 × (path + 2 labels) + attention
	require.Equal(t, h, lines[0])
	require.Contains(t, lines[6], "attention: "+att)
	f, err := os.Open(att)
	require.NoError(t, err)
	cfg, err := png.DecodeConfig(f)
	f.Close()
	require.NoError(t, err)
	require.Equal(t, 2*overlaySide+3*overlayGap, cfg.Width)

	out.Reset()
	require.Equal(t, 0, run([]string{"classify", "--checkpoint", final, "--json", v}, &out, &errb), errb.String())
	var res struct {
		Image       string
		Predictions []prediction
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))
	require.Equal(t, v, res.Image)
	require.Len(t, res.Predictions, 2) // top 5 of 2 labels
	require.InDelta(t, 1, res.Predictions[0].Score+res.Predictions[1].Score, 1e-9)
	require.GreaterOrEqual(t, res.Predictions[0].Score, res.Predictions[1].Score)

	// bad input
	bad := filepath.Join(dir, "bad.png")
	require.NoError(t, os.WriteFile(bad, []byte("\x89PNG\r\n\x1a\nnot really"), 0o644))
	small := filepath.Join(dir, "small.png")
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewGray(image.Rect(0, 0, 2, 2))))
	require.NoError(t, os.WriteFile(small, buf.Bytes(), 0o644))
	notVit := filepath.Join(dir, "bert")
	require.NoError(t, os.MkdirAll(notVit, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(notVit, "config.json"), []byte(`{"model_type": "bert"}`), 0o644))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"classify", "--checkpoint", final, bad}, 1, "bad.png: corrupt or truncated"},
		{[]string{"classify", "--checkpoint", final, small}, 1, "small.png: 2×2 pixels is smaller than the model's patch of 4×4"},
		{[]string{"classify", "--checkpoint", notVit, h}, 1, "another model family"},
		{[]string{"classify", "--checkpoint", final}, 2, "no image"},
		{[]string{"eval", "--checkpoint", final, "--data", valImgs}, 1, "give its IDX labels file too (labels)"},
		{[]string{"finetune", "vit", "--train-data", trainImgs, "--train-labels", trainLabels, "--init-from", notVit}, 1, "another model family"},
		{[]string{"finetune", "vit", "--train-data", trainImgs, "--train-labels", trainLabels, "--model", model, "--image-size", "10", "--run", filepath.Join(dir, "r2")}, 1, "image_size 10 is not divisible by patch_size 4"},
		{[]string{"finetune", "vit"}, 2, "--train-data is required"},
		{[]string{"finetune", "vit", "--train-data", trainImgs, "--scale", "1"}, 2, "want two numbers"},
	} {
		errb.Reset()
		require.Equal(t, tc.code, run(tc.args, &out, &errb), "%v: %s", tc.args, errb.String())
		require.Contains(t, errb.String(), tc.want, "%v", tc.args)
	}
}

package main

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// MAE → fine-tune → classify through the CLI: zoo pretrain vit makes an
// MAE checkpoint, zoo finetune vit puts a classifier on its encoder at a
// new image size (28 → 32, position embeddings resampled; the decoder
// dropped), then against the same architecture from scratch, and zoo
// classify prints the top labels and draws the attention rollout.
func TestViTMAEFinetuneClassify(t *testing.T) {
	mae := pretrainTinyMAE(t)
	dir := t.TempDir()
	images, labels := maeIDX(t, dir, 40)
	run1 := filepath.Join(dir, "ft")
	args := []string{"finetune", "vit", "--init-from", mae, "--image-size", "32", "--train-data", images, "--train-labels", labels,
		"--label-names", "fashion-mnist", "--val-fraction", "0.2", "--max-steps", "2", "--batch-size", "8", "--eval-interval", "0", "--run", run1}
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(args, &out, &errb), "%s\n%s", errb.String(), out.String())
	for _, want := range []string{"resampled from a 7×7 grid (image_size 28) to 8×8 (image_size 32)", "decoder.* (",
		"created classifier.weight, classifier.bias", "the weights of " + mae, "done: 2 steps", "macro-F1"} {
		require.Contains(t, out.String(), want)
	}
	out.Reset()
	require.Equal(t, 0, run(append(args[:len(args)-1], filepath.Join(dir, "scratch"), "--scratch"), &out, &errb), "%s\n%s", errb.String(), out.String())
	require.Contains(t, out.String(), "fresh weights (scratch, seed 1) in the architecture of "+mae)
	require.Contains(t, out.String(), "32×32 images in a 8×8 grid")

	img := image.NewGray(image.Rect(0, 0, 28, 28))
	for i := range img.Pix {
		if i%28 > 6 && i%28 < 20 {
			img.Pix[i] = 200
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	p := filepath.Join(dir, "x.png")
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	att := filepath.Join(dir, "att.png")
	out.Reset()
	final := filepath.Join(run1, "checkpoints", "final")
	require.Equal(t, 0, run([]string{"classify", "--checkpoint", final, "--attention", att, p}, &out, &errb), errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 7, out.String()) // the path, 5 labels, the attention line
	require.Contains(t, out.String(), "8×8 patches")
	require.FileExists(t, att)
}

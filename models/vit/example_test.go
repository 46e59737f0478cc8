package vit_test

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"
	"os"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/vit"
	"gorgonia.org/tensor"
)

// Build the 28×28 preset with a 10-class head and score a batch of two
// images.
func Example() {
	m, err := vit.New(vit.Fashion(), vit.StoreOption(layers.WithSeed(1)))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := vit.NewForImageClassification(m, []string{"T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("parameters:", c.NumParams())
	g := c.Store.NewGraph()
	pixels := g.Input("pixel_values", 2, 1, 28, 28) // zeros: set them with layers.SetFloats
	h, err := c.Features(g, pixels)
	if err != nil {
		fmt.Println(err)
		return
	}
	logits, err := c.ClassLogits(g, pixels)
	if err != nil {
		fmt.Println(err)
		return
	}
	vm, err := g.Machine() // the store's memory pool
	if err != nil {
		fmt.Println(err)
		return
	}
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("hidden:", h.Shape(), "logits:", logits.Shape())
	// Output:
	// parameters: 1199882
	// hidden: (2, 50, 128) logits: (2, 10)
}

// Load a Hugging Face ViTForImageClassification checkpoint as a classifier
// of other labels at twice its image size: its head is replaced and its
// position embeddings are resampled as transformers resamples them.
func ExampleLoadForImageClassification() {
	c, report, err := vit.LoadForImageClassification("testdata/parity", models.WithLabels("yes", "no"), vit.WithImageSize(16, ""))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Config.ImageSize, "pixels,", c.Config.NumPatches(), "patches")
	fmt.Println("dropped:", report.Dropped)
	fmt.Println("created:", report.Created, "new head:", report.NewHead)
	fmt.Println(report.Resampled)
	// Output:
	// 16 pixels, 16 patches
	// dropped: [classifier.bias classifier.weight]
	// created: [classifier.weight classifier.bias] new head: true
	// vit.embeddings.position_embeddings resampled from a 2×2 grid (image_size 8) to 4×4 (image_size 16) by hf
}

// Read a classifier checkpoint as it was saved, strictly, with the labels
// of its config.json's id2label, at another image size (WithImageSize),
// in float64 (a layers.Option), pooling by the mean (a model option): every
// kind of option goes in the one list.
func ExampleWithImageSize() {
	c, report, err := vit.LoadForImageClassification("testdata/parity", models.Strict(),
		vit.WithImageSize(16, layers.ResampleSize), layers.WithDtype(tensor.Float64), vit.WithPooling(vit.PoolMean))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Labels, c.Config.ImageSize, c.Store.Dtype(), c.Pooling)
	fmt.Println("dropped:", report.Dropped, "created:", report.Created, "new head:", report.NewHead)
	fmt.Println(report.Resampled)
	// Output:
	// [cat dog bird] 16 float64 mean
	// dropped: [] created: [] new head: false
	// vit.embeddings.position_embeddings resampled from a 2×2 grid (image_size 8) to 4×4 (image_size 16) by size
}

// tiny is a ViT small enough for examples: 8×8 RGB images in 4×4 patches
// (a 2×2 grid), one layer, 8 wide.
func tiny() vit.Config {
	c := vit.Fashion()
	c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize = 8, 1, 2, 16
	c.ImageSize, c.PatchSize, c.NumChannels, c.EncoderStride = 8, 4, 3, 4
	return c
}

// Classify images of another size than image_size, here 8×12 (a 2×3
// patch grid) for a model of 8×8, by interpolating the position embeddings
// to the grid as transformers' interpolate_pos_encoding does. Without
// WithInterpolation such images are refused.
func ExampleWithInterpolation() {
	labels := []string{"cat", "dog", "bird"}
	const b, h, w = 2, 8, 12
	pixels := make([]float32, b*3*h*w)
	for i := range pixels {
		pixels[i] = float32(i%7) / 7
	}

	m, err := vit.New(tiny(), vit.StoreOption(layers.WithSeed(1)))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := vit.NewForImageClassification(m, labels)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.ProbabilitiesAt(pixels, b, h, w)
	fmt.Println(err)

	m, err = vit.New(tiny(), vit.StoreOption(layers.WithSeed(1)), vit.WithInterpolation(layers.ResampleSize))
	if err != nil {
		fmt.Println(err)
		return
	}
	if c, err = vit.NewForImageClassification(m, labels); err != nil {
		fmt.Println(err)
		return
	}
	probs, err := c.ProbabilitiesAt(pixels, b, h, w)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(probs), "rows of", len(probs[0]), "probabilities")
	for _, row := range probs {
		var sum float64
		for _, p := range row {
			sum += p
		}
		fmt.Println("sum 1:", math.Abs(sum-1) < 1e-6)
	}
	// Output:
	// vit: images are 8×12 but the model's image_size is 8: resize them to 8×8, interpolate the position embeddings to their grid (WithInterpolation, as transformers' interpolate_pos_encoding=True), or load the checkpoint at the new size with its position embeddings resampled (WithImageSize)
	// 2 rows of 3 probabilities
	// sum 1: true
	// sum 1: true
}

// A mean-pooling classifier records its pooling in config.json
// (zoo_pooling), so that it is restored on load; a transformers
// checkpoint, which has no such key, pools by the class token.
func ExampleSavedPooling() {
	dir, err := os.MkdirTemp("", "vit-pooling")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	m, err := vit.New(tiny(), vit.StoreOption(layers.WithSeed(1)), vit.WithPooling(vit.PoolMean))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := vit.NewForImageClassification(m, []string{"yes", "no"})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.Save(dir); err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range []string{dir, "testdata/parity"} {
		p, recorded, err := vit.SavedPooling(d)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(p, "recorded:", recorded)
	}
	// Output:
	// mean recorded: true
	// cls recorded: false
}

// Read every layer's hidden states for a batch of images, as
// transformers' output_hidden_states: the embeddings' output, then each
// layer's, before the final LayerNorm.
func ExampleModel_HiddenStates() {
	m, err := vit.New(vit.Fashion(), vit.StoreOption(layers.WithSeed(1))) // 6 layers, 28×28 images, 7×7 patches
	if err != nil {
		fmt.Println(err)
		return
	}
	pixels := make([]float32, 2*1*28*28) // two grayscale images
	hs, err := m.HiddenStates(pixels, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("(B, L+1, N+1, D) = (%d, %d, %d, %d)\n", len(hs), len(hs[0]), len(hs[0][0]), len(hs[0][0][0]))
	// Output:
	// (B, L+1, N+1, D) = (2, 7, 50, 128)
}

// Read every layer's attention probabilities for one image, as
// transformers' output_attentions.
func ExampleModel_Attentions() {
	m, err := vit.New(vit.Fashion(), vit.StoreOption(layers.WithSeed(1)))
	if err != nil {
		fmt.Println(err)
		return
	}
	att, err := m.Attentions(make([]float32, 28*28), 1) // one grayscale image
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("(B, L, h, N+1, N+1) = (%d, %d, %d, %d, %d)\n", len(att), len(att[0]), len(att[0][0]), len(att[0][0][0]), len(att[0][0][0][0]))
	// Output:
	// (B, L, h, N+1, N+1) = (1, 6, 4, 50, 50)
}

// Classify images in one call: the checkpoint's image processor prepares
// them, and each gets its top labels with their probabilities.
func ExampleLoadImageClassification() {
	clf, err := vit.LoadImageClassification("testdata/parity") // a tiny cat/dog/bird ViT
	if err != nil {
		fmt.Println(err)
		return
	}
	red := image.NewRGBA(image.Rect(0, 0, 32, 24)) // any size: the processor resizes
	draw.Draw(red, red.Bounds(), image.NewUniform(color.RGBA{R: 200, A: 255}), image.Point{}, draw.Src)
	clf.TopK = 2
	out, err := clf.Predict(context.Background(), []image.Image{red, image.NewGray(image.Rect(0, 0, 8, 8))})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, labels := range out {
		fmt.Printf("%s %.3f, %s %.3f\n", labels[0].Label, labels[0].Score, labels[1].Label, labels[1].Score)
	}
	// Output:
	// bird 0.690, dog 0.300
	// bird 0.550, dog 0.438
}

// Extract features in one call: each image's last hidden state (the class
// token, then the patches) and its pooled vector.
func ExampleLoadFeatureExtraction() {
	fe, err := vit.LoadFeatureExtraction("testdata/parity") // the backbone of any ViT checkpoint
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := fe.Predict(context.Background(), []image.Image{image.NewGray(image.Rect(0, 0, 20, 20))})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("tokens:", len(out[0].LastHidden), "width:", len(out[0].Pooled))
	// Output:
	// tokens: 5 width: 16
}

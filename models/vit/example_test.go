package vit_test

import (
	"fmt"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/vit"
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
	c, report, err := vit.LoadForImageClassification("testdata/parity", []string{"yes", "no"}, vit.LoadOptions{ImageSize: 16})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Config.ImageSize, "pixels,", c.Config.NumPatches(), "patches")
	fmt.Println("dropped:", report.Dropped)
	fmt.Println("created:", report.Created)
	fmt.Println(report.Resampled)
	// Output:
	// 16 pixels, 16 patches
	// dropped: [classifier.bias classifier.weight]
	// created: [classifier.weight classifier.bias]
	// vit.embeddings.position_embeddings resampled from a 2×2 grid (image_size 8) to 4×4 (image_size 16) by hf
}

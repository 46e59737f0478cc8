package vit

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
)

// This file is inference on the MAE model: its reconstruction of masked
// images, to look at.

// Reconstruction is the model's reconstruction of a batch: the inputs to
// draw a picture of originals, masked inputs and reconstructions.
type Reconstruction struct {
	// Pixels (B, C, S, S) are the originals (normalised, as given).
	Pixels []float32
	// Mask (B, N) is 1 for the masked patches.
	Mask []float64
	// Reconstructed (B, C, S, S) are the predictions unpatchified, in the
	// originals' units: with norm_pix_loss each predicted patch is mapped
	// back with the original patch's own mean and standard deviation, as
	// MAE's visualisation does (so the picture shows the predicted
	// structure; the patch brightness comes from the original).
	Reconstructed []float64
	// Loss is the batch's masked-patch loss.
	Loss float64
}

// Reconstruct runs the model (no dropout) on b images with the given
// noise and returns its reconstruction. It builds a graph each call: for
// a few pictures per evaluation, not for training. Safe for concurrent use
// by multiple goroutines: each call builds and runs a graph of its own.
func (m *ViTMAEForPreTraining) Reconstruct(pixels []float32, noise []float64, b int) (*Reconstruction, error) {
	g := m.Store.NewGraph()
	mg, err := m.Graph(g, b)
	if err != nil {
		return nil, err
	}
	if err := mg.Set(pixels, noise); err != nil {
		return nil, err
	}
	var logits, loss gorgonia.Value
	gorgonia.Read(mg.Logits, &logits)
	gorgonia.Read(mg.Loss, &loss)
	vm, err := g.Machine()
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, fmt.Errorf("vit_mae: reconstruct: %w", err)
	}
	pred, err := layers.Float64s(logits)
	if err != nil {
		return nil, err
	}
	pv := m.Config.PatchValues()
	if mg.TargetStd != nil {
		for r := range mg.TargetStd {
			for j := 0; j < pv; j++ {
				pred[r*pv+j] = pred[r*pv+j]*mg.TargetStd[r] + mg.TargetMean[r]
			}
		}
	}
	img, err := m.Config.Unpatchify(pred, b)
	if err != nil {
		return nil, err
	}
	var l float64
	switch v := loss.Data().(type) {
	case float32:
		l = float64(v)
	case float64:
		l = v
	}
	return &Reconstruction{Pixels: pixels, Mask: mg.Masking.Mask, Reconstructed: img, Loss: l}, nil
}

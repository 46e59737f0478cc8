package vit

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/train"
)

// This file is MAE pretraining for the training engine (train.Task):
// batches of pixels with their masking noise.

// MAEBatch is B images for MAETask, with the noise that masks them.
type MAEBatch struct {
	// Pixels are B images (B, C, S, S), row-major, normalised.
	Pixels []float32
	// Noise (B, N) is random_masking's noise (MaskNoise): drawn from the
	// batch's place in the data, so a resumed run masks as the run it
	// continues.
	Noise []float64
	// Masked is the number of masked patches in the batch, B·(N − len_keep):
	// the loss's targets.
	Masked int
}

// Targets implements train.Batch: the masked patches, over which the loss
// is a mean.
func (b MAEBatch) Targets() int { return b.Masked }

// maskSalt separates the masking noise's generator from the loader's.
const maskSalt = 0x6d61_7365_0000_0000

// MaskNoise is the masking noise (B, N), uniform in [0, 1) as torch.rand,
// of the batch at index in epoch of a run seeded with seed: a function of
// those alone (PCG seeded as datasets' augmentations are), so that resume
// is exact. Evaluation batches use epoch −1, the same noise at every
// evaluation.
func MaskNoise(seed uint64, epoch, index, b, n int) []float64 {
	r := rand.New(rand.NewPCG(seed^maskSalt^uint64(epoch)<<32, uint64(index)))
	return Noise(r, b, n)
}

// MAETask trains a ViTMAEForPreTraining on batches of B images (MAEBatch).
// Its loss is the masked patches' MSE (forward_loss).
type MAETask struct {
	Model *ViTMAEForPreTraining
	B     int
	// SaveExtra, when not nil, writes the checkpoint's other files
	// (preprocessor_config.json) after the model's.
	SaveExtra func(dir string) error
}

// Store implements train.Task.
func (k *MAETask) Store() *layers.Store { return k.Model.Store }

// Decay implements train.Decayer (see ViTMAEForPreTraining.Decay).
func (k *MAETask) Decay(name string, shape []int) bool { return k.Model.Decay(name, shape) }

// Loss implements train.Task.
func (k *MAETask) Loss(g *layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	if k.B <= 0 {
		return nil, nil, fmt.Errorf("vit_mae task: batch size %d must be positive", k.B)
	}
	mg, err := k.Model.Graph(g, k.B)
	if err != nil {
		return nil, nil, err
	}
	load := func(b train.Batch) error {
		mb, ok := b.(MAEBatch)
		if !ok {
			return fmt.Errorf("vit_mae task: a batch of %T is not an MAEBatch", b)
		}
		if err := mg.Set(mb.Pixels, mb.Noise); err != nil {
			return fmt.Errorf("vit_mae task: %w", err)
		}
		return nil
	}
	return mg.Loss, load, nil
}

// Save implements train.Task: the model's files, then SaveExtra's.
func (k *MAETask) Save(dir string) error {
	if err := k.Model.Save(dir); err != nil {
		return err
	}
	if k.SaveExtra != nil {
		return k.SaveExtra(dir)
	}
	return nil
}

// Load implements train.Task.
func (k *MAETask) Load(dir string) error {
	return k.Model.LoadWeights(filepath.Join(dir, models.WeightsFile))
}

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

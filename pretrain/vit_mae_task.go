package pretrain

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/vit"
	"github.com/d73a19ff/zoo/train"
)

// This file is ViT MAE pretraining (models/vit's ViTMAEForPreTraining) for
// the training engine (train.Task): batches of pixels with their masking
// noise.

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
	return vit.Noise(r, b, n)
}

// MAETask trains a ViTMAEForPreTraining on batches of B images (MAEBatch).
// Its loss is the masked patches' MSE (forward_loss).
type MAETask struct {
	Model *vit.ViTMAEForPreTraining
	B     int
	// SaveExtra, when not nil, writes the checkpoint's other files
	// (preprocessor_config.json) after the model's.
	SaveExtra func(dir string) error
}

// Store implements train.Task.
func (k *MAETask) Store() *layers.Store { return k.Model.Store }

// Decay implements train.Decayer (see vit.ViTMAEForPreTraining.Decay).
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

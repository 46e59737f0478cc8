package finetune

import (
	"fmt"
	"path/filepath"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/vit"
	"github.com/d73a19ff/zoo/train"
)

// This file is image classification with a ViT (models/vit) for the
// training engine (train.Task): batches of float pixels and int labels, or
// soft targets for mixup and cutmix.

// ImageBatch is B images for ImageTask: the engine's train.Batch.
type ImageBatch struct {
	// Pixels are B images (B, C, S, S), row-major (NCHW), normalised.
	Pixels []float32
	// Labels (B) are the class ids, layers.IgnoreIndex for a padding row
	// (a short last evaluation batch). With soft targets they are the
	// labels accuracy is reported against (the larger share of a mixed
	// image) and mark the padding rows.
	Labels []int
	// Soft (B, K), when not nil, are target distributions (mixup and
	// cutmix mix two one-hot labels): the loss is SoftCrossEntropy. Nil:
	// the one-hot of Labels. A padding row's targets are ignored.
	Soft []float32
}

// Targets implements train.Batch: the rows whose label is not ignored
// (every row, for soft targets).
func (b ImageBatch) Targets() int {
	n := 0
	for _, l := range b.Labels {
		if l != layers.IgnoreIndex {
			n++
		}
	}
	return n
}

// ImageTask trains an image classifier on (B, C, S, S) batches for the
// engine. With Soft it builds its graph on target distributions
// (SoftCrossEntropy), and hard-labelled batches (evaluation) are fed as
// their one-hot rows; without, on int labels with LabelSmoothing. It
// reports "accuracy" when the batches carry labels.
type ImageTask struct {
	Model          *vit.ForImageClassification
	B              int
	Soft           bool
	LabelSmoothing float64
	// SaveExtra, when not nil, writes the checkpoint's other files
	// (preprocessor_config.json) after the model's.
	SaveExtra func(dir string) error
}

// Store implements train.Task.
func (k *ImageTask) Store() *layers.Store { return k.Model.Store }

// Decay implements train.Decayer: the model's no-decay parameters
// (vit.Model.Decay).
func (k *ImageTask) Decay(name string, shape []int) bool { return k.Model.Decay(name, shape) }

// Loss implements train.Task.
func (k *ImageTask) Loss(g *layers.Graph) (*gorgonia.Node, func(train.Batch) error, error) {
	if k.B <= 0 {
		return nil, nil, fmt.Errorf("vit task: batch size %d must be positive", k.B)
	}
	c := k.Model.Config
	nk := len(k.Model.Labels)
	pixels := g.Input("pixel_values", k.B, c.NumChannels, c.ImageSize, c.ImageSize)
	labels := g.IntInput("labels", k.B)
	var soft *gorgonia.Node
	var loss, logits *gorgonia.Node
	var err error
	if k.Soft {
		soft = g.Input("soft_targets", k.B, nk)
		loss, logits, err = k.Model.SoftLoss(g, pixels, soft)
	} else {
		loss, logits, err = k.Model.Loss(g, pixels, labels, k.LabelSmoothing)
	}
	if err != nil {
		return nil, nil, err
	}
	acc, err := layers.Accuracy(logits, labels, layers.IgnoreIndex)
	if err != nil {
		return nil, nil, fmt.Errorf("vit task: %w", err)
	}
	if err := g.Report("accuracy", acc); err != nil {
		return nil, nil, fmt.Errorf("vit task: %w", err)
	}
	size := c.NumChannels * c.ImageSize * c.ImageSize
	load := func(b train.Batch) error {
		ib, ok := b.(ImageBatch)
		if !ok {
			return fmt.Errorf("vit task: a batch of %T is not an ImageBatch", b)
		}
		if len(ib.Pixels) != k.B*size {
			return fmt.Errorf("vit task: %d pixel values do not fill the (%d, %d, %d, %d) batch", len(ib.Pixels), k.B, c.NumChannels, c.ImageSize, c.ImageSize)
		}
		setPixels(pixels, ib.Pixels)
		if len(ib.Labels) != k.B {
			return fmt.Errorf("vit task: %d labels for a batch of %d", len(ib.Labels), k.B)
		}
		n := 0
		for i, l := range ib.Labels {
			if l != layers.IgnoreIndex && (l < 0 || l >= nk) {
				return fmt.Errorf("vit task: label %d of image %d is outside the %d classes [0, %d)", l, i, nk, nk)
			}
			if l != layers.IgnoreIndex {
				n++
			}
		}
		copy(labels.Value().Data().([]int), ib.Labels)
		if soft == nil {
			if ib.Soft != nil {
				return fmt.Errorf("vit task: a batch with soft targets needs a task with Soft set")
			}
			return nil
		}
		if ib.Soft != nil && len(ib.Soft) != k.B*nk {
			return fmt.Errorf("vit task: %d soft targets do not fill (%d, %d)", len(ib.Soft), k.B, nk)
		}
		// SoftCrossEntropy averages over all B rows; scaling the real
		// rows' targets by B/n and zeroing the padding makes it the mean
		// over the n real ones.
		st := make([]float32, k.B*nk)
		w := float32(0)
		if n > 0 {
			w = float32(k.B) / float32(n)
		}
		for i, l := range ib.Labels {
			switch {
			case l == layers.IgnoreIndex:
			case ib.Soft != nil:
				for j := 0; j < nk; j++ {
					st[i*nk+j] = w * ib.Soft[i*nk+j]
				}
			default:
				st[i*nk+l] = w
			}
		}
		setPixels(soft, st)
		return nil
	}
	return loss, load, nil
}

// Save implements train.Task: the model's files, then SaveExtra's.
func (k *ImageTask) Save(dir string) error {
	if err := k.Model.Save(dir); err != nil {
		return err
	}
	if k.SaveExtra != nil {
		return k.SaveExtra(dir)
	}
	return nil
}

// Load implements train.Task.
func (k *ImageTask) Load(dir string) error {
	return k.Model.LoadWeights(filepath.Join(dir, models.WeightsFile))
}

package vit

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// This file is the image-classification pipeline's loader (Hugging Face's
// pipeline("image-classification")): a checkpoint directory read as a
// classifier and the image processor its images go through.

// PipelineOptions set how LoadPipeline reads a checkpoint. The zero value
// reads it as saved.
type PipelineOptions struct {
	// Pool is the pooling to use, "cls" or "mean"; "" is the checkpoint's
	// (config.json's zoo_pooling; absent: cls). Another than the one the
	// checkpoint records is an error (the head was trained on it); a
	// checkpoint that records none (transformers', or zoo's from before
	// the key) takes Pool as given.
	Pool string
	// Size, when set, is the height × width the images are processed to,
	// in place of the preprocessor_config.json's size.
	Size datasets.ImageSize
	// Interpolate is how the position embeddings are resampled when the
	// processed images are not image_size square (transformers'
	// interpolate_pos_encoding=True): layers.ResampleSize (the default,
	// transformers 5.x), layers.ResampleHF (4.18) or layers.ResampleTimm.
	Interpolate layers.ResampleMethod
}

// LoadPipeline reads a ViT image classifier checkpoint (config.json with
// id2label or num_labels, model.safetensors) and its image processor
// (preprocessor_config.json; without one, ViTImageProcessor's defaults at
// the model's image size), with the processor's MinSize set to the patch.
// The pooling is the checkpoint's; images processed to another size than
// image_size × image_size (by the processor's size or o.Size; each side a
// multiple of patch_size) are read with the position embeddings
// interpolated to their grid (o.Interpolate). A checkpoint of another
// family, or one without labels, is an error saying so.
//
// The processor turns an image into C × H × W pixels (proc.OutputSize,
// proc.Len values, channels first); the classifier's ProbabilitiesAt takes
// B of them, (B, C, H, W) row-major, and returns B rows of len(Labels)
// probabilities. Both are safe for concurrent use by multiple goroutines:
// processing only reads the processor, and each inference call builds and
// runs a graph of its own.
func LoadPipeline(dir string, o PipelineOptions) (*ForImageClassification, *datasets.ImageProcessor, error) {
	return loadPipeline(dir, o, nil)
}

// loadPipeline is LoadPipeline with store options (dtype) for the model.
func loadPipeline(dir string, o PipelineOptions, store []layers.Option) (*ForImageClassification, *datasets.ImageProcessor, error) {
	ckpt, err := models.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	if err := ckpt.Expect("vit"); err != nil {
		return nil, nil, err
	}
	var head struct {
		ModelType string            `json:"model_type"`
		ID2Label  map[string]string `json:"id2label"`
		NumLabels *int              `json:"num_labels"`
	}
	if err := layers.ReadConfig(dir, &head); err != nil {
		return nil, nil, err
	}
	if len(head.ID2Label) == 0 && head.NumLabels == nil {
		return nil, nil, fmt.Errorf("checkpoint %s (model_type %s) has no classifier head (no id2label in %s): fine-tune it first, zoo finetune vit --init-from %s", dir, head.ModelType, models.ConfigFile, dir)
	}
	saved, recorded, err := SavedPooling(dir)
	if err != nil {
		return nil, nil, err
	}
	if o.Pool != "" && o.Pool != string(PoolClass) && o.Pool != string(PoolMean) {
		return nil, nil, fmt.Errorf("pool %q: want cls or mean, or leave it out to use the checkpoint's (%s)", o.Pool, saved)
	}
	if o.Pool != "" && Pooling(o.Pool) != saved && recorded {
		return nil, nil, fmt.Errorf("%s was trained with %s pooling (zoo_pooling in its %s), not %s: leave the pooling out, the checkpoint's is used", dir, saved, models.ConfigFile, o.Pool)
	}
	// A checkpoint that records no pooling (transformers', or zoo's from
	// before zoo_pooling) pools by the class token unless told otherwise.
	opts := []models.LoadOption{models.Strict(), WithInterpolation(cmp.Or(o.Interpolate, layers.ResampleSize))}
	if o.Pool != "" {
		opts = append(opts, WithPooling(Pooling(o.Pool)))
	}
	if len(store) > 0 {
		opts = append(opts, StoreOption(store...))
	}
	clf, _, err := LoadForImageClassification(dir, opts...)
	if err != nil {
		return nil, nil, err
	}
	proc, err := readProcessor(dir, clf.Model, o.Size)
	if err != nil {
		return nil, nil, err
	}
	return clf, proc, nil
}

// readProcessor reads the image processor of the checkpoint in dir for m
// (its preprocessor_config.json; without one, ViTImageProcessor's
// defaults at m's image size), processing to size when it is set, with
// MinSize the patch; a size m cannot read is an error.
func readProcessor(dir string, m *Model, size datasets.ImageSize) (*datasets.ImageProcessor, error) {
	pc := datasets.DefaultProcessorConfig()
	pc.Size = datasets.ImageSize{Height: m.Config.ImageSize, Width: m.Config.ImageSize}
	if _, err := os.Stat(filepath.Join(dir, datasets.ProcessorConfigFile)); err == nil {
		if pc, err = datasets.ReadProcessorConfig(dir); err != nil {
			return nil, err
		}
	}
	if size != (datasets.ImageSize{}) {
		pc.DoResize, pc.Size, pc.DoCenterCrop, pc.CropSize = true, size, false, nil
	}
	proc, err := datasets.NewImageProcessor(pc, m.Config.NumChannels)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, datasets.ProcessorConfigFile), err)
	}
	if h, w := proc.OutputSize(); m.CheckSize(m.Config.NumChannels, h, w) != nil {
		return nil, fmt.Errorf("%s makes %d×%d images, which the model (image_size %d, patch_size %d) cannot read: %w",
			cmp.Or(filepath.Join(dir, datasets.ProcessorConfigFile), "the size asked for"), h, w, m.Config.ImageSize, m.Config.PatchSize, m.CheckSize(m.Config.NumChannels, h, w))
	}
	proc.MinSize = m.Config.PatchSize
	return proc, nil
}

package vit

import (
	"context"
	"fmt"
	"image"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// This file is ViT's one-call inference (issue 36): Hugging Face's
// pipeline("image-classification") and pipeline("image-feature-extraction")
// as Go types that take decoded images and return plain values.

// DefaultTopK is how many labels ImageClassification returns per image:
// the image-classification pipeline's top_k default.
const DefaultTopK = 5

// DefaultBatchSize is how many images a pipeline runs through the model at
// once.
const DefaultBatchSize = 8

// ImageClassification is the image-classification pipeline: a ViT
// classifier and the image processor of its checkpoint. It keeps the
// graphs it compiles, by batch size, for later batches and calls (see
// ReleaseGraphs); make it with a loader or NewImageClassification, and do
// not copy it. Predict may be called from many goroutines at once (the
// fields must not change while it runs): processing only reads the
// processor, and each batch runs a compiled graph that no other call holds
// meanwhile.
type ImageClassification struct {
	Model     *ForImageClassification
	Processor *datasets.ImageProcessor
	// TopK is how many labels each image gets, best first: DefaultTopK
	// from the loaders, capped at the number of labels as the pipeline
	// caps top_k; 0 or less returns every label.
	TopK int
	// BatchSize is how many images run through the model at once
	// (DefaultBatchSize from the loaders); 0 or less is DefaultBatchSize.
	BatchSize int

	graphs graphCache
}

// LoadImageClassification reads a ViT image classifier checkpoint (a
// ViTForImageClassification of Hugging Face's or one zoo wrote) and its
// preprocessor_config.json as LoadPipeline does (strictly), with TopK
// DefaultTopK and BatchSize DefaultBatchSize. Its options may be
// layers.Options for the model's store (layers.WithDtype) and
// models.Strict; other sizes, poolings or interpolations are
// LoadPipeline's (then NewImageClassification). A checkpoint without a
// classifier head is an error.
func LoadImageClassification(dir string, opts ...models.LoadOption) (*ImageClassification, error) {
	store, _, err := storeOptions("LoadImageClassification", opts) // always strict
	if err != nil {
		return nil, err
	}
	clf, proc, err := loadPipeline(dir, PipelineOptions{}, store)
	if err != nil {
		return nil, err
	}
	return NewImageClassification(clf, proc)
}

// NewImageClassification makes the pipeline of a classifier and an image
// processor (LoadPipeline's), checking that the model reads the
// processor's output.
func NewImageClassification(clf *ForImageClassification, proc *datasets.ImageProcessor) (*ImageClassification, error) {
	if clf == nil || proc == nil {
		return nil, fmt.Errorf("vit: image classification needs a classifier and an image processor")
	}
	if err := checkProcessor(clf.Model, proc); err != nil {
		return nil, err
	}
	return &ImageClassification{Model: clf, Processor: proc, TopK: DefaultTopK, BatchSize: DefaultBatchSize}, nil
}

// Predict classifies images (decoded: datasets.DecodeImage, or any
// image.Image) and returns, for each in order, its TopK labels with their
// probabilities (the softmax of the logits), best first, ties in label
// order: the image-classification pipeline's output (function_to_apply
// softmax, as for every ViT classifier, which has at least two labels and
// single-label problem_type). Each image goes through the processor
// (resize, crop, rescale, normalise) to the model's input; BatchSize of
// them run at once, and ctx is checked before each batch (its error is
// returned, wrapped). No images, more than models.MaxPredictInputs, or a
// nil or empty image is an error naming it.
func (p *ImageClassification) Predict(ctx context.Context, images []image.Image) ([][]models.Label, error) {
	probs, err := p.Probabilities(ctx, images)
	if err != nil {
		return nil, err
	}
	return p.labels(probs), nil
}

// PredictFiles is Predict on image files (PNG, JPEG, GIF or BMP, read
// and decoded as datasets.OpenImage does, one batch at a time: the
// decoded images of one batch are held at once); an image smaller than
// the patch is refused, and errors name the file.
func (p *ImageClassification) PredictFiles(ctx context.Context, paths []string) ([][]models.Label, error) {
	if err := checkFiles(paths); err != nil {
		return nil, err
	}
	if p.Processor == nil {
		return nil, fmt.Errorf("vit: image classification needs a classifier and an image processor")
	}
	probs, err := p.probabilities(ctx, fileSource(paths, p.Processor.MinSize))
	if err != nil {
		return nil, err
	}
	return p.labels(probs), nil
}

// Probabilities is Predict before its top-k: every label's probability
// for each image, (len(images), len(Labels)), in label order.
func (p *ImageClassification) Probabilities(ctx context.Context, images []image.Image) ([][]float64, error) {
	if err := checkImages(images); err != nil {
		return nil, err
	}
	return p.probabilities(ctx, imageSource(images))
}

func (p *ImageClassification) probabilities(ctx context.Context, src source) ([][]float64, error) {
	if p.Model == nil || p.Processor == nil {
		return nil, fmt.Errorf("vit: image classification needs a classifier and an image processor")
	}
	if err := checkProcessor(p.Model.Model, p.Processor); err != nil {
		return nil, err
	}
	h, w := p.Processor.OutputSize()
	out := make([][]float64, 0, src.n)
	k := len(p.Model.Labels)
	err := batches(ctx, p.Processor, src, p.BatchSize, func(px []float32, b int) error {
		if err := p.Model.CheckStepAt(b, h, w, false); err != nil {
			return err
		}
		z, err := p.graphs.run(p.Model.Model, b, h, w, px, func(g *layers.Graph, in *gorgonia.Node) ([]*gorgonia.Node, error) {
			logits, err := p.Model.Logits(g, in)
			return []*gorgonia.Node{logits}, err
		})
		if err != nil {
			return err
		}
		out = append(out, softmaxRows(z[0], b, k)...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// labels are the top-k labels of each row of probs.
func (p *ImageClassification) labels(probs [][]float64) [][]models.Label {
	out := make([][]models.Label, len(probs))
	for i, row := range probs {
		out[i] = models.TopLabels(row, p.Model.Labels, p.TopK)
	}
	return out
}

// ImageFeatures are one image's features: the feature-extraction
// pipeline's last_hidden_state and the zoo's pooled vector.
type ImageFeatures struct {
	// LastHidden is the backbone's output after its final LayerNorm,
	// (N+1, D): the class token first, then the N patches row-major
	// (transformers' last_hidden_state).
	LastHidden [][]float64 `json:"last_hidden_state"`
	// Pooled is the model's pooling of LastHidden (D): the class token's
	// row, or the mean of the patches' for a mean-pooled checkpoint, what
	// the classifier head reads (timm's pre-logits). It is not
	// transformers' pooler_output (a dense layer and tanh on the class
	// token, which zoo does not load).
	Pooled []float64 `json:"pooled"`
}

// FeatureExtraction is the image feature-extraction pipeline: a ViT
// backbone (of any head) and its checkpoint's image processor. It keeps
// its compiled graphs and may be called from many goroutines at once, as
// ImageClassification; do not copy it.
type FeatureExtraction struct {
	Model     *Model
	Processor *datasets.ImageProcessor
	// BatchSize is how many images run through the model at once; 0 or
	// less is DefaultBatchSize.
	BatchSize int

	graphs graphCache
}

// LoadFeatureExtraction reads the backbone of a ViT checkpoint of any
// head (Load: heads dropped; its pooling the checkpoint's) and its
// image processor as LoadPipeline does, the position embeddings
// interpolated (layers.ResampleSize) when the processor's size is not
// image_size. Its options may be layers.Options for the model's store
// and models.Strict (Load's: a checkpoint with a head then fails).
func LoadFeatureExtraction(dir string, opts ...models.LoadOption) (*FeatureExtraction, error) {
	store, strict, err := storeOptions("LoadFeatureExtraction", opts)
	if err != nil {
		return nil, err
	}
	lo := []models.LoadOption{WithInterpolation(layers.ResampleSize)}
	if strict {
		lo = append(lo, models.Strict())
	}
	if len(store) > 0 {
		lo = append(lo, StoreOption(store...))
	}
	m, _, err := Load(dir, lo...)
	if err != nil {
		return nil, err
	}
	proc, err := readProcessor(dir, m, datasets.ImageSize{})
	if err != nil {
		return nil, err
	}
	return &FeatureExtraction{Model: m, Processor: proc, BatchSize: DefaultBatchSize}, nil
}

// Predict returns each image's features, in order (see ImageFeatures),
// batching, checking ctx and refusing inputs as ImageClassification's
// Predict does.
func (f *FeatureExtraction) Predict(ctx context.Context, images []image.Image) ([]ImageFeatures, error) {
	if err := checkImages(images); err != nil {
		return nil, err
	}
	return f.features(ctx, imageSource(images))
}

// PredictFiles is Predict on image files, read as
// ImageClassification.PredictFiles reads them.
func (f *FeatureExtraction) PredictFiles(ctx context.Context, paths []string) ([]ImageFeatures, error) {
	if err := checkFiles(paths); err != nil {
		return nil, err
	}
	if f.Processor == nil {
		return nil, fmt.Errorf("vit: feature extraction needs a model and an image processor")
	}
	return f.features(ctx, fileSource(paths, f.Processor.MinSize))
}

func (f *FeatureExtraction) features(ctx context.Context, src source) ([]ImageFeatures, error) {
	if f.Model == nil || f.Processor == nil {
		return nil, fmt.Errorf("vit: feature extraction needs a model and an image processor")
	}
	if err := checkProcessor(f.Model, f.Processor); err != nil {
		return nil, err
	}
	h, w := f.Processor.OutputSize()
	c := f.Model.Config
	t, d := (h/c.PatchSize)*(w/c.PatchSize)+c.prefixTokens(), c.HiddenSize
	out := make([]ImageFeatures, 0, src.n)
	err := batches(ctx, f.Processor, src, f.BatchSize, func(px []float32, b int) error {
		if err := (&ForImageClassification{Model: f.Model}).CheckStepAt(b, h, w, false); err != nil {
			return fmt.Errorf("vit: feature extraction: %w", err)
		}
		vals, err := f.graphs.run(f.Model, b, h, w, px, func(g *layers.Graph, in *gorgonia.Node) ([]*gorgonia.Node, error) {
			last, err := f.Model.Features(g, in)
			if err != nil {
				return nil, err
			}
			pooled, err := f.Model.Pool(g, last)
			return []*gorgonia.Node{last, pooled}, err
		})
		if err != nil {
			return fmt.Errorf("vit: feature extraction: %w", err)
		}
		for r := range b {
			rows := make([][]float64, t)
			for i := range rows {
				off := (r*t + i) * d
				rows[i] = vals[0][off : off+d : off+d]
			}
			out = append(out, ImageFeatures{LastHidden: rows, Pooled: vals[1][r*d : (r+1)*d : (r+1)*d]})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// storeOptions are the layers.Options among a pipeline loader's opts,
// and whether models.Strict is one; any other option is an error naming
// where.
func storeOptions(where string, opts []models.LoadOption) ([]layers.Option, bool, error) {
	s := models.ReadLoadOptions(opts)
	if s.Labels != nil || len(s.Family) > 0 {
		return nil, false, fmt.Errorf("vit: %s reads the checkpoint as saved and takes only store options (layers.WithDtype) and models.Strict: for another pooling, size or interpolation use LoadPipeline", where)
	}
	return s.Store, s.Strict, nil
}

// checkProcessor reports a processor whose output m cannot read.
func checkProcessor(m *Model, proc *datasets.ImageProcessor) error {
	h, w := proc.OutputSize()
	if proc.Channels != m.Config.NumChannels {
		return fmt.Errorf("vit: the image processor makes %d channels, the model reads %d", proc.Channels, m.Config.NumChannels)
	}
	if err := m.CheckSize(m.Config.NumChannels, h, w); err != nil {
		return fmt.Errorf("vit: the image processor makes %d×%d images: %w", h, w, err)
	}
	return nil
}

// checkImages reports no images, too many, and a nil or empty one.
func checkImages(images []image.Image) error {
	if len(images) == 0 {
		return fmt.Errorf("vit: no images to predict on")
	}
	if len(images) > models.MaxPredictInputs {
		return fmt.Errorf("vit: %d images is more than %d (models.MaxPredictInputs): predict in parts", len(images), models.MaxPredictInputs)
	}
	for i, img := range images {
		if img == nil || img.Bounds().Empty() {
			return fmt.Errorf("vit: image %d is empty", i)
		}
	}
	return nil
}

// graphKey is the shape of a pipeline's compiled graph: b images of h × w
// pixels through model m.
type graphKey struct {
	m       *Model
	b, h, w int
}

// imageGraph is a compiled graph over b processed images: its pixel
// input, and its outputs' values as the last run left them.
type imageGraph struct {
	vm   *layers.Machine
	px   *gorgonia.Node
	outs []gorgonia.Value
}

// Close releases the graph's machine.
func (g *imageGraph) Close() { g.vm.Close() }

// graphCache keeps a pipeline's compiled graphs by shape, so that a batch
// of a shape seen before runs the graph compiled then (layers.GraphCache:
// calls on several goroutines never share one).
type graphCache struct {
	cache layers.GraphCache[graphKey, *imageGraph]
}

// run runs the graph of outputs that build makes of the pixel input, for
// b images of h × w pixels px (B, C, H, W), compiling it the first time
// the shape comes, and returns the outputs' values, flat.
func (c *graphCache) run(m *Model, b, h, w int, px []float32, build func(g *layers.Graph, in *gorgonia.Node) ([]*gorgonia.Node, error)) ([][]float64, error) {
	k := graphKey{m, b, h, w}
	ig, err := c.cache.Get(k, func() (*imageGraph, error) {
		g := m.Store.NewGraph()
		in := g.Input("pixel_values", b, m.Config.NumChannels, h, w)
		nodes, err := build(g, in)
		if err != nil {
			return nil, err
		}
		ig := &imageGraph{px: in, outs: make([]gorgonia.Value, len(nodes))}
		for i, n := range nodes {
			gorgonia.Read(n, &ig.outs[i]) // memory of its own (layers.Machine)
		}
		if ig.vm, err = g.Machine(); err != nil {
			return nil, err
		}
		return ig, nil
	})
	if err != nil {
		return nil, err
	}
	copyFloats(ig.px, px)
	if err := ig.vm.RunAll(); err != nil {
		ig.Close()
		return nil, fmt.Errorf("vit: %w", err)
	}
	out := make([][]float64, len(ig.outs))
	for i, v := range ig.outs {
		if out[i], err = layers.Float64s(v); err != nil {
			ig.Close()
			return nil, fmt.Errorf("vit: %w", err)
		}
	}
	c.cache.Put(k, ig, m.Config.activationBytesAt(b, h, w, false))
	return out, nil
}

// ReleaseGraphs frees the graphs the pipeline compiled, by shape, for
// later calls (at most layers.DefaultMaxGraphs). It is safe to call while
// other goroutines predict.
func (p *ImageClassification) ReleaseGraphs() { p.graphs.cache.Reset() }

// ReleaseGraphs frees the graphs the pipeline compiled, as
// ImageClassification's does.
func (f *FeatureExtraction) ReleaseGraphs() { f.graphs.cache.Reset() }

// source is a pipeline's n images, read one at a time: decoded images, or
// files decoded as they are needed.
type source struct {
	n   int
	get func(i int) (image.Image, error)
}

func imageSource(images []image.Image) source {
	return source{len(images), func(i int) (image.Image, error) { return images[i], nil }}
}

// fileSource decodes paths[i] (datasets.OpenImage, refusing images
// smaller than minSize); its errors name the file.
func fileSource(paths []string, minSize int) source {
	return source{len(paths), func(i int) (image.Image, error) {
		return datasets.OpenImage(paths[i], datasets.DecodeOptions{MinSize: minSize})
	}}
}

// checkFiles reports no paths and too many.
func checkFiles(paths []string) error {
	if len(paths) == 0 {
		return fmt.Errorf("vit: no image files to predict on")
	}
	if len(paths) > models.MaxPredictInputs {
		return fmt.Errorf("vit: %d image files is more than %d (models.MaxPredictInputs): predict in parts", len(paths), models.MaxPredictInputs)
	}
	return nil
}

// batches processes src's images batch at a time (DefaultBatchSize for 0
// or less) into one pixel buffer (B, C, H, W) and calls run on it,
// checking ctx before each batch.
func batches(ctx context.Context, proc *datasets.ImageProcessor, src source, batch int, run func(px []float32, b int) error) error {
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	n := proc.Len()
	buf := make([]float32, min(batch, src.n)*n)
	for lo := 0; lo < src.n; lo += batch {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("vit: predict: %d of %d images done: %w", lo, src.n, err)
		}
		b := min(batch, src.n-lo)
		px := buf[:b*n]
		for i := range b {
			img, err := src.get(lo + i)
			if err != nil {
				return fmt.Errorf("vit: %w", err)
			}
			if err := proc.ProcessInto(px[i*n:(i+1)*n], img); err != nil {
				return fmt.Errorf("vit: image %d: %w", lo+i, err)
			}
		}
		if err := run(px, b); err != nil {
			return err
		}
	}
	return nil
}

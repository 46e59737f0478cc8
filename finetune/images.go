package finetune

// Image classification with ViT (`zoo finetune vit`): from scratch with a
// preset, or from a ViT (or ViT-MAE) checkpoint at its own or a new image
// size; on IDX files, an ImageFolder or a CSV of path,label. The recipe is
// DeiT's (Touvron et al. 2021, and timm's train.py that implements it):
// AdamW, warmup then cosine decay, label smoothing, random erasing, mixup
// and CutMix as options, all seeded and exact across --resume.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/heatmap"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/vit"
	"github.com/d73a19ff/zoo/train"
)

// ImagesConfig is the configuration of image classification with ViT.
// Its augmentation keys are datasets.Augment's and datasets.Mixup's (timm's
// train.py names: hflip, reprob, padding, random_resized_crop, mixup,
// cutmix, smoothing, …), at the top level.
type ImagesConfig struct {
	// InitFrom is a ViT checkpoint (config.json model_type vit, or a
	// ViT-MAE pretraining checkpoint) whose backbone the classifier starts
	// from; empty: a new model of the Model preset.
	InitFrom string `json:"init_from"`
	// Model is the configuration of a new model (see vit.Preset): fashion
	// (28×28 grey, patch 4), tiny, small or base (224×224 RGB, patch 16),
	// or a config .json file.
	Model string `json:"model"`
	// ImageSize, when not 0, is the image side: for a new model it
	// replaces the preset's; for a checkpoint, another size than its own
	// resamples its position embeddings (PositionResample).
	ImageSize int `json:"image_size"`
	// PatchSize and NumChannels, when not 0, replace the preset's (new
	// models only).
	PatchSize   int `json:"patch_size"`
	NumChannels int `json:"num_channels"`
	// Pool is how the backbone pools: "cls" (the class token) or "mean"
	// (the patches); empty: init_from's saved pooling, else cls. It is
	// saved with the checkpoint (config.json's zoo_pooling) and restored
	// by zoo eval and zoo classify.
	Pool string `json:"pool"`
	// PositionResample is how a checkpoint's position embeddings are
	// resampled to a new image size: hf (the default), size or timm
	// (layers.ResampleMethod).
	PositionResample string `json:"position_resample"`

	// TrainData is an IDX images file (with TrainLabels), an ImageFolder
	// directory or a CSV of path,label.
	TrainData   string `json:"train_data"`
	TrainLabels string `json:"train_labels"`
	// ValData (with ValLabels for IDX) is scored at each evaluation and at
	// the end; without it ValFraction of TrainData is held out.
	ValData     string  `json:"validation_data"`
	ValLabels   string  `json:"validation_labels"`
	ValFraction float64 `json:"val_fraction"`
	// LabelNames names the classes by label id: "fashion-mnist"
	// (datasets.FashionMNISTLabels), a comma-separated list, or empty: an
	// IDX set's ids ("0", "1", …), an ImageFolder's folder names, a CSV's
	// labels.
	LabelNames string `json:"label_names"`
	// LabelFraction keeps this fraction of each class of the training
	// split (datasets.StratifiedSubset): the 1%/10%/100% label
	// experiments. 1 keeps all.
	LabelFraction float64 `json:"label_fraction"`
	// ImageMean and ImageStd normalise pixels scaled to [0, 1], one value
	// for every channel or one per channel; each left empty is the
	// checkpoint's preprocessor_config.json's, else an IDX training set's
	// own statistic, else 0.5 (ViTImageProcessor's default). The saved
	// preprocessor_config.json has one value per channel.
	ImageMean []float64 `json:"image_mean"`
	ImageStd  []float64 `json:"image_std"`
	// Workers decode and augment batches ahead of the step (at most
	// datasets.MaxLoaderWorkers).
	Workers int `json:"workers"`
	// Teacher, when set, is a ViT or DeiT image-classification checkpoint
	// of the data's labels that the student distils from (DeiT's hard
	// distillation, images_distill.go): the student is then a DeiT with
	// the teacher heads (vit.NewForImageClassificationWithTeacher).
	Teacher string `json:"teacher"`
	// Distillation is DistillHard or DistillNone; "" is hard with a
	// teacher, none without.
	Distillation string `json:"distillation"`

	datasets.Augment
	datasets.Mixup
	Training
}

// DefaultImages is the Fashion preset's recipe: batch 128, 3000 steps at
// peak learning rate 1e-3 (warmup 200, cosine to 1e-5), weight decay 0.05,
// gradient clip 1, label smoothing 0.1, 10% held out when no validation
// set is given, 2 loader workers. Augmentations are off; their ranges are
// datasets.DefaultAugment's and DefaultMixup's, so that one flag turns one
// on. The run directory, when left empty, is runs/vit-classify.
func DefaultImages() ImagesConfig {
	aug := datasets.DefaultAugment()
	aug.ResizedCrop, aug.FlipProb = false, 0
	mix := datasets.DefaultMixup(0)
	mix.MixupAlpha, mix.CutmixAlpha = 0, 0
	return ImagesConfig{
		Model: "fashion", ValFraction: 0.1, LabelFraction: 1, Workers: 2,
		Augment: aug, Mixup: mix,
		Training: Training{Args: train.Args{BatchSize: 128, MaxSteps: 3000, LearningRate: 1e-3, LRSchedulerType: "cosine", MinLR: 1e-5, WarmupSteps: 200, WeightDecay: 0.05, AdamBeta1: 0.9, AdamBeta2: 0.999, AdamEpsilon: 1e-8, MaxGradNorm: 1, EvalSteps: 500, Seed: 1}},
	}
}

// ReadImagesConfig reads a JSON config file over base; unknown keys and
// wrong types are errors.
func ReadImagesConfig(path string, base ImagesConfig) (ImagesConfig, error) {
	return train.ReadConfig(path, base, func(c *ImagesConfig) *train.Args { return &c.Args }, "", nil)
}

// ImagesResult is what an image classification run produced.
type ImagesResult struct {
	train.Result
	// Confusion is on the validation (or test) set with the final weights.
	Confusion Confusion
	// ConfusionPNG is the confusion matrix drawn in the run directory.
	ConfusionPNG string
	// TrainImagesPerSec is the training throughput of this run's steps
	// (forward, backward, AdamW, and any wait for data);
	// InferImagesPerSec the forward throughput of the final evaluation (of
	// one rank's share, under data-parallel ranks).
	TrainImagesPerSec, InferImagesPerSec float64
	// DataWait is how long the steps waited for the loader in all, over
	// DataBatches batches.
	DataWait    time.Duration
	DataBatches int
}

// mixing reports whether mixup or CutMix is on.
func (c ImagesConfig) mixing() bool { return c.MixupAlpha > 0 || c.CutmixAlpha > 0 }

// augmenting reports whether a per-item augmentation is on.
func (c ImagesConfig) augmenting() bool {
	return c.ResizedCrop || c.Padding > 0 || c.FlipProb > 0 || c.EraseProb > 0
}

// check reports the settings that cannot run, naming their keys: the
// training arguments' (train.Args.Validate), then its own.
func (c ImagesConfig) check() error {
	if c.TrainData == "" {
		return fmt.Errorf("finetune: train_data is required: IDX images (with train_labels), an ImageFolder directory or a CSV of path,label")
	}
	if err := c.Args.Validate(); err != nil {
		return err
	}
	switch {
	case c.ValData == "" && !(c.ValFraction > 0 && c.ValFraction < 1):
		return fmt.Errorf("finetune: val_fraction %g must be in (0, 1) when no validation_data is given", c.ValFraction)
	case !(c.LabelFraction > 0 && c.LabelFraction <= 1):
		return fmt.Errorf("finetune: label_fraction %g must be in (0, 1]", c.LabelFraction)
	case c.LRSchedulerType != "cosine" && c.LRSchedulerType != "linear":
		return fmt.Errorf("finetune: lr_scheduler_type %q: want cosine or linear", c.LRSchedulerType)
	case c.Workers < 0:
		return fmt.Errorf("finetune: workers %d must not be negative", c.Workers)
	case c.Workers > datasets.MaxLoaderWorkers:
		return fmt.Errorf("finetune: %w", datasets.CheckWorkers(c.Workers))
	case c.ImageSize < 0 || c.PatchSize < 0 || c.NumChannels < 0:
		return fmt.Errorf("finetune: image_size %d, patch_size %d and num_channels %d must not be negative", c.ImageSize, c.PatchSize, c.NumChannels)
	case c.InitFrom != "" && (c.PatchSize != 0 || c.NumChannels != 0):
		return fmt.Errorf("finetune: patch_size and num_channels are the checkpoint's (init_from %s); drop them", c.InitFrom)
	case c.Pool != "" && c.Pool != string(vit.PoolClass) && c.Pool != string(vit.PoolMean):
		return fmt.Errorf("finetune: pool %q: want cls or mean", c.Pool)
	case c.ValLabels != "" && c.ValData == "":
		return fmt.Errorf("finetune: validation_labels needs validation_data (the IDX images they label)")
	}
	if err := c.checkDistillation(); err != nil {
		return err
	}
	if c.PositionResample != "" {
		if err := layers.ResampleMethod(c.PositionResample).Validate(); err != nil {
			return fmt.Errorf("finetune: position_resample: %w", err)
		}
	}
	if !(c.LabelSmoothing >= 0 && c.LabelSmoothing < 1) {
		return fmt.Errorf("finetune: smoothing %g must be in [0, 1)", c.LabelSmoothing)
	}
	if err := c.Augment.Validate(); err != nil {
		return fmt.Errorf("finetune: %w", err)
	}
	// Mixup's ranges even when it is off: a negative α is a mistake, not
	// "off".
	if err := c.Mixup.CheckRanges(); err != nil {
		return fmt.Errorf("finetune: %w", err)
	}
	if err := datasets.CheckMeanStd(c.ImageMean, c.ImageStd); err != nil {
		return fmt.Errorf("finetune: %w", err)
	}
	for _, v := range []struct {
		key  string
		vals []float64
	}{{"image_mean", c.ImageMean}, {"image_std", c.ImageStd}} {
		if len(v.vals) > 3 {
			return fmt.Errorf("finetune: %s has %d values: give one for every channel or one per channel (1 grey, 3 RGB)", v.key, len(v.vals))
		}
	}
	return nil
}

// modelConfig is the model configuration for a new ViT: a preset name
// (vit.Preset: fashion, tiny, small or base), or a JSON file of ViTConfig
// keys (ending in .json), whose keys left out are the Fashion preset's.
func modelConfig(name string) (vit.Config, error) {
	if strings.HasSuffix(strings.ToLower(name), ".json") {
		b, err := os.ReadFile(name)
		if err != nil {
			return vit.Config{}, fmt.Errorf("finetune: model: %w", err)
		}
		c := vit.Fashion()
		if err := json.Unmarshal(b, &c); err != nil {
			return vit.Config{}, fmt.Errorf("finetune: model %s: %w", name, err)
		}
		c.ID2Label = nil
		return c, nil
	}
	c, err := vit.Preset(name)
	if err != nil {
		return vit.Config{}, fmt.Errorf("finetune: model %q: want fashion, tiny, small, base or a ViT config .json file", name)
	}
	return c, nil
}

// ParseLabelNames reads a label_names value: "fashion-mnist", a
// comma-separated list, or "" (nil: the data set's own names).
func ParseLabelNames(s string) ([]string, error) {
	switch s = strings.TrimSpace(s); s {
	case "":
		return nil, nil
	case "fashion-mnist":
		return slices.Clone(datasets.FashionMNISTLabels), nil
	}
	names := strings.Split(s, ",")
	seen := map[string]bool{}
	for i, n := range names {
		names[i] = strings.TrimSpace(n)
		if names[i] == "" || seen[names[i]] {
			return nil, fmt.Errorf("label_names %q: name %d is empty or repeated: give distinct names separated by commas, or fashion-mnist", s, i+1)
		}
		seen[names[i]] = true
	}
	return names, nil
}

// OpenImageData opens a labelled image set: IDX images with an IDX labels
// file (labels not empty), an ImageFolder directory, or a CSV of
// path,label. names, when not nil, are the class names by id: an IDX
// set's ids index them, a CSV's labels are among them, an ImageFolder's
// folders are among them (mapped to their ids). what names the setting for
// errors ("train_data"; its labels file's is what with "labels" for
// "data"). minSize is the smallest image side (the patch).
func OpenImageData(path, labels string, names []string, minSize int, what string) (datasets.ImageSet, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	switch {
	case labels != "":
		s, err := datasets.OpenIDX(path, labels, names)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, path, err)
		}
		return s, nil
	case st.IsDir():
		s, err := datasets.OpenImageFolder(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		s.Decode.MinSize = minSize
		if names == nil {
			return s, nil
		}
		return relabel(s, names, what+" "+path)
	case strings.EqualFold(filepath.Ext(path), ".csv"):
		s, err := datasets.ReadImageCSV(path, names)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		s.Decode.MinSize = minSize
		return s, nil
	case isIDXName(path):
		return nil, fmt.Errorf("%s %s looks like IDX images: give its IDX labels file too (%s)", what, path, strings.Replace(what, "data", "labels", 1))
	}
	return nil, fmt.Errorf("%s %s: unsupported data: give IDX images with their labels file, an ImageFolder directory (a folder per class) or a .csv of path,label", what, path)
}

func isIDXName(p string) bool {
	b := strings.ToLower(filepath.Base(p))
	return strings.Contains(b, "idx") || strings.Contains(b, "ubyte")
}

// relabelled is an ImageSet whose label ids are mapped to another list of
// names: ids[l] is the new id of the set's label l.
type relabelled struct {
	datasets.ImageSet
	names []string
	ids   []int
}

// relabel maps set's class names to their ids in names; a class of set
// not in names is an error.
func relabel(set datasets.ImageSet, names []string, what string) (datasets.ImageSet, error) {
	if slices.Equal(set.Labels(), names) {
		return set, nil
	}
	ids := make([]int, len(set.Labels()))
	for i, n := range set.Labels() {
		if ids[i] = slices.Index(names, n); ids[i] < 0 {
			return nil, fmt.Errorf("%s: class %q is not among the %d class names %s", what, n, len(names), shortNames(names))
		}
	}
	return &relabelled{ImageSet: set, names: names, ids: ids}, nil
}

func shortNames(names []string) string {
	if len(names) > 12 {
		return strings.Join(names[:12], ", ") + ", …"
	}
	return strings.Join(names, ", ")
}

func (r *relabelled) Labels() []string  { return r.names }
func (r *relabelled) Label(i int) int   { return r.ids[r.ImageSet.Label(i)] }
func (r *relabelled) Name(i int) string { return datasets.ItemName(r.ImageSet, i) }
func (r *relabelled) Item(i int) (img image.Image, id int, err error) {
	img, id, err = r.ImageSet.Item(i)
	if err == nil {
		id = r.ids[id]
	}
	return img, id, err
}

// splitSet shuffles set's items with the seed and holds out frac of them.
func splitSet(set datasets.ImageSet, frac float64, seed uint64) (tr, va *datasets.Subset, err error) {
	n := set.Len()
	k := max(1, int(math.Round(float64(n)*frac)))
	if k >= n {
		return nil, nil, fmt.Errorf("finetune: %d images leave none to train on after holding out val_fraction %g", n, frac)
	}
	perm := rand.New(rand.NewPCG(seed, 31)).Perm(n)
	va = &datasets.Subset{Set: set, Indices: slices.Sorted(slices.Values(perm[:k]))}
	tr = &datasets.Subset{Set: set, Indices: slices.Sorted(slices.Values(perm[k:]))}
	return tr, va, nil
}

// idxStats are the mean and standard deviation of an IDX set's pixels
// scaled to [0, 1], or ok false for other sets.
func idxStats(set datasets.ImageSet) (mean, std float64, ok bool) {
	s, isIDX := set.(*datasets.IDXSet)
	if !isIDX || len(s.Images.Pix) == 0 {
		return 0, 0, false
	}
	mean, std = s.PixelStats()
	return mean, std, true
}

// imageData serves the engine: training batches from the loader (resumable
// through its State), the padded validation batches, and, at each
// evaluation, a line on how long the steps waited for data.
type imageData struct {
	loader *datasets.ImageLoader
	val    []train.Batch
	b      int
	out    io.Writer
	// waits since the last evaluation: the total, the longest, the
	// batches served and those that waited over waitedOver.
	wait, longest time.Duration
	served, slow  int
	// all waits of this run
	total   time.Duration
	batches int
}

// waitedOver is the wait that counts a batch as late: handing over a ready
// batch takes microseconds.
const waitedOver = time.Millisecond

// toVit turns a loader batch into the task's batch of b rows: a short
// batch is padded with zero images labelled layers.IgnoreIndex.
func toVit(ib *datasets.ImageBatch, b int) ImageBatch {
	if ib.B == b {
		return ImageBatch{Pixels: ib.Pixels, Labels: ib.Labels, Soft: ib.Soft}
	}
	n := ib.C * ib.H * ib.W
	px := make([]float32, b*n)
	copy(px, ib.Pixels)
	labels := make([]int, b)
	for i := range labels {
		labels[i] = layers.IgnoreIndex
	}
	copy(labels, ib.Labels)
	return ImageBatch{Pixels: px, Labels: labels}
}

func (d *imageData) Next() (train.Batch, error) {
	ib, err := d.loader.Next()
	if err != nil {
		return nil, err
	}
	d.wait += ib.Wait
	d.total += ib.Wait
	d.longest = max(d.longest, ib.Wait)
	d.served++
	d.batches++
	if ib.Wait > waitedOver {
		d.slow++
	}
	return toVit(ib, d.b), nil
}

// Eval returns the validation batches and reports how long the steps
// waited for data since the last evaluation.
func (d *imageData) Eval() ([]train.Batch, error) {
	if d.served > 0 && d.out != nil {
		fmt.Fprintf(d.out, "data: %d of the last %d steps waited over %s for their batch; %s waited in all, the longest %s\n",
			d.slow, d.served, waitedOver, d.wait.Round(time.Microsecond), d.longest.Round(time.Microsecond))
	}
	d.wait, d.longest, d.served, d.slow = 0, 0, 0, 0
	return d.val, nil
}

// Skip passes over a batch another data-parallel rank trains on, without
// decoding it (train.Skipper).
func (d *imageData) Skip() error { return d.loader.Skip() }

func (d *imageData) State() ([]byte, error) { return json.Marshal(d.loader.State()) }

func (d *imageData) Restore(b []byte) error {
	var st datasets.LoaderState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("image data state %q: %w", b, err)
	}
	return d.loader.Restore(st)
}

// RunClassifyImages trains a ViT image classifier as cfg says and reports
// accuracy, macro-F1 and the confusion matrix (also drawn to
// <output_dir>/confusion.png) on the validation set with the final weights,
// and the training and inference throughput. Every checkpoint holds
// config.json (with id2label), model.safetensors and
// preprocessor_config.json. It is train.Run with the image recipe
// (ImagesRecipe).
func RunClassifyImages(ctx context.Context, cfg ImagesConfig, out io.Writer) (*ImagesResult, error) {
	r, err := NewImagesRecipe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	res, err := train.Run(ctx, r.Args(), r, out)
	if err != nil {
		return nil, err
	}
	ir := r.Result
	ir.Result = res
	return &ir, nil
}

// ImagesRecipe is image classification with ViT as a train.Recipe: the
// labelled images (held out, subsampled), a ViT classifier (new, or from
// init_from), its image processor, a data loader that augments and mixes
// on workers, DeiT's schedule, and the confusion matrix and throughput at
// the end. Use it with train.Run (with its Args()), or RunClassifyImages;
// Close it when train.Run returns.
// A recipe serves one train.Run at a time.
type ImagesRecipe struct {
	cfg         ImagesConfig
	labels      []string
	full        datasets.ImageSet // train_data as given, for run.json
	trainSet    datasets.ImageSet // its training part
	valSet      datasets.ImageSet
	notes       []string // on the data, printed by Setup
	mean, std   float64  // an IDX training set's own statistics
	measured    bool
	clf         *vit.ForImageClassification
	proc        *datasets.ImageProcessor
	from        string
	out         io.Writer // Setup's, for the data lines
	loader      *datasets.ImageLoader
	data        *imageData
	evalBatches []*datasets.ImageBatch
	start       int // the step training starts from
	teacher     *imageTeacher
	// Result holds the confusion matrix (and its picture), the
	// throughput and the data waits, set by Finish (its train.Result is
	// left to train.Run's caller).
	Result ImagesResult
}

// NewImagesRecipe checks cfg, that init_from, if given, is a ViT
// checkpoint, and opens the images (holding out val_fraction when there
// is no validation set, and keeping label_fraction): the errors a user
// should see before a run directory is touched. Their class names make
// the head. An empty output_dir is runs/vit-classify.
func NewImagesRecipe(_ context.Context, cfg ImagesConfig) (*ImagesRecipe, error) {
	if cfg.OutputDir == "" {
		cfg.OutputDir = filepath.Join("runs", "vit-classify")
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	names, err := ParseLabelNames(cfg.LabelNames)
	if err != nil {
		return nil, fmt.Errorf("finetune: %w", err)
	}
	if cfg.InitFrom != "" {
		ckpt, err := models.Open(cfg.InitFrom)
		if err != nil {
			return nil, fmt.Errorf("finetune: init_from: %w", err)
		}
		if err := ckpt.Expect("vit"); err != nil {
			return nil, fmt.Errorf("finetune: init_from: %w", err)
		}
	}
	patch := 0
	if cfg.InitFrom == "" {
		mc, err := cfg.newModelConfig()
		if err != nil {
			return nil, err
		}
		if err := mc.Validate(); err != nil {
			return nil, fmt.Errorf("finetune: model %s: %w", cmp(cfg.Model, "fashion"), err)
		}
		patch = mc.PatchSize
	}
	r := &ImagesRecipe{cfg: cfg}
	if r.full, err = OpenImageData(cfg.TrainData, cfg.TrainLabels, names, patch, "train_data"); err != nil {
		return nil, fmt.Errorf("finetune: %w", err)
	}
	r.trainSet, r.labels = r.full, r.full.Labels()
	for _, w := range LabelSurprises(r.full) {
		r.notes = append(r.notes, fmt.Sprintf("warning: train_data %s: %s", cfg.TrainData, w))
	}
	if cfg.ValData != "" {
		if r.valSet, err = OpenImageData(cfg.ValData, cfg.ValLabels, r.labels, patch, "validation_data"); err != nil {
			return nil, fmt.Errorf("finetune: %w", err)
		}
	} else if r.trainSet, r.valSet, err = splitSet(r.full, cfg.ValFraction, cfg.Seed); err != nil {
		return nil, err
	}
	if cfg.distilling() {
		if r.teacher, err = openTeacher(cfg.Teacher, r.labels); err != nil {
			return nil, err
		}
	}
	r.mean, r.std, r.measured = idxStats(baseSet(r.trainSet))
	if cfg.LabelFraction < 1 {
		all := r.trainSet.Len()
		if r.trainSet, err = datasets.StratifiedSubset(r.trainSet, cfg.LabelFraction, cfg.Seed); err != nil {
			return nil, fmt.Errorf("finetune: label_fraction: %w", err)
		}
		r.notes = append(r.notes, fmt.Sprintf("labels: %d of %d training images kept (label_fraction %g, stratified by class)", r.trainSet.Len(), all, cfg.LabelFraction))
	}
	if r.trainSet.Len() < cfg.BatchSize {
		return nil, fmt.Errorf("finetune: %d training images for a batch of %d: lower batch_size or use more images", r.trainSet.Len(), cfg.BatchSize)
	}
	return r, nil
}

// Args are the arguments to give train.Run with the recipe: the
// config's, with the default output_dir filled in.
func (r *ImagesRecipe) Args() train.Args { return r.cfg.Args }

// Record is what run.json records: the whole configuration but the
// settings a resume may change, with the images by content
// (datasets.Fingerprint), so that a resume on replaced files is refused
// and the same files given by another path are not, and init_from and a
// model .json file by their resolved paths.
func (r *ImagesRecipe) Record(ctx context.Context) (train.Record, error) {
	rec := r.cfg
	var err error
	if rec.TrainData, err = datasets.Fingerprint(ctx, r.full); err != nil {
		return nil, fmt.Errorf("finetune: train_data: %w", err)
	}
	rec.TrainLabels = ""
	if rec.ValData != "" {
		if rec.ValData, err = datasets.Fingerprint(ctx, r.valSet); err != nil {
			return nil, fmt.Errorf("finetune: validation_data: %w", err)
		}
		rec.ValLabels = ""
	}
	rec.InitFrom = resolvedPath(rec.InitFrom)
	rec.Teacher = resolvedPath(rec.Teacher)
	if strings.HasSuffix(strings.ToLower(rec.Model), ".json") {
		rec.Model = resolvedPath(rec.Model)
	}
	return record(rec)
}

// Setup makes the classifier for the labels (new, or from init_from,
// fresh with scratch) and its image processor (image_mean and image_std
// each given, else the checkpoint's, else an IDX training set's own, else
// 0.5), and checks that a step fits in memory. A resume's weights come
// from its checkpoint when training starts.
func (r *ImagesRecipe) Setup(_ context.Context, _ string, out io.Writer) (train.MemoryNeed, error) {
	cfg := r.cfg
	r.out = out
	for _, n := range r.notes {
		fmt.Fprintln(out, n)
	}
	var err error
	if r.clf, r.proc, r.from, err = buildImageClassifier(cfg, r.labels, out); err != nil {
		return train.MemoryNeed{}, err
	}
	pc := r.proc.Config
	inherited := cfg.InitFrom != "" && hasProcessor(cfg.InitFrom)
	if len(cfg.ImageMean) > 0 {
		pc.ImageMean = cfg.ImageMean
	} else if r.measured && !inherited {
		pc.ImageMean = []float64{round4(r.mean)}
	}
	if len(cfg.ImageStd) > 0 {
		pc.ImageStd = cfg.ImageStd
	} else if r.measured && !inherited {
		pc.ImageStd = []float64{round4(r.std)}
	}
	if r.proc, err = datasets.NewImageProcessor(pc, r.clf.Config.NumChannels); err != nil {
		return train.MemoryNeed{}, fmt.Errorf("finetune: %w", err)
	}
	r.proc.MinSize = r.clf.Config.PatchSize
	if err := r.clf.CheckStep(cfg.BatchSize, true); err != nil {
		return train.MemoryNeed{}, fmt.Errorf("finetune: %w", err)
	}
	if r.teacher != nil {
		if err := r.teacher.fit(r.proc, r.clf.Config.NumChannels, cfg.BatchSize); err != nil {
			return train.MemoryNeed{}, err
		}
		fmt.Fprintln(out, r.teacher.note())
	}
	return train.MemoryNeed{}, nil
}

// Build makes the data loader (Start starts it, once a resume has
// restored its position), the validation batches and the task.
func (r *ImagesRecipe) Build(ctx context.Context) (train.Plan, error) {
	cfg, clf := r.cfg, r.clf
	lc := datasets.LoaderConfig{BatchSize: cfg.BatchSize, Workers: cfg.Workers, Seed: cfg.Seed}
	if cfg.augmenting() {
		a := cfg.Augment
		lc.Augment = &a
	}
	if cfg.mixing() {
		m := cfg.Mixup
		m.NumClasses = len(r.labels)
		lc.Mixup = &m
	}
	lc.Keep = train.KeepBatch // data-parallel ranks decode only their own batches
	var err error
	if r.loader, err = datasets.NewImageLoader(ctx, r.trainSet, r.proc, lc); err != nil {
		return train.Plan{}, fmt.Errorf("finetune: %w", err)
	}
	began := time.Now()
	if r.evalBatches, err = datasets.LoadAll(ctx, r.valSet, r.proc, cfg.BatchSize, max(cfg.Workers, 1)); err != nil {
		return train.Plan{}, fmt.Errorf("finetune: validation: %w", err)
	}
	out := r.out
	r.data = &imageData{loader: r.loader, b: cfg.BatchSize, out: out}
	for _, b := range r.evalBatches {
		r.data.val = append(r.data.val, toVit(b, cfg.BatchSize))
	}
	pc := r.proc.Config
	fmt.Fprintf(out, "data: %d training and %d validation images of %d classes, processed to %d×%d×%d (mean %v, std %v); validation decoded in %s\n",
		r.trainSet.Len(), r.valSet.Len(), len(r.labels), clf.Config.NumChannels, clf.Config.ImageSize, clf.Config.ImageSize,
		pc.ImageMean, pc.ImageStd, time.Since(began).Round(time.Millisecond))

	task := &ImageTask{Model: clf, B: cfg.BatchSize, Soft: cfg.mixing(), SaveExtra: r.proc.Config.Save}
	if !cfg.mixing() {
		task.LabelSmoothing = cfg.LabelSmoothing
	}
	sched, err := cfg.schedule()
	if err != nil {
		return train.Plan{}, err
	}
	var t train.Task = task
	if r.teacher != nil {
		t = &distillTask{ImageTask: task, teacher: r.teacher}
	}
	grid := clf.Config.ImageSize / clf.Config.PatchSize
	return train.Plan{Task: t, Data: r.data, Schedule: sched, Unit: "img",
		Summary: fmt.Sprintf("%s: %d parameters, %d layers, %d heads, %d wide; %d×%d images in a %d×%d grid of %d×%d patches, pool %s; %d labels; %s\n"+
			"recipe: batch %d, %d steps, AdamW lr %g (warmup %d, %s), weight decay %g, clip %g; augment %s",
			studentKind(clf), clf.NumParams(), clf.Config.NumHiddenLayers, clf.Config.NumAttentionHeads, clf.Config.HiddenSize,
			clf.Config.ImageSize, clf.Config.ImageSize, grid, grid, clf.Config.PatchSize, clf.Config.PatchSize, clf.Pooling, len(r.labels), r.from,
			cfg.BatchSize, cfg.MaxSteps, cfg.LearningRate, cfg.WarmupSteps, cfg.LRSchedulerType, cfg.WeightDecay, cfg.MaxGradNorm, cfg.describeAugment()),
	}, nil
}

// Start notes the step training starts from, for the throughput, and
// starts the loader: its first batches are made while the run starts.
func (r *ImagesRecipe) Start(tr *train.Trainer) {
	r.start = tr.Step()
	r.loader.Start()
}

// Finish measures the training throughput (from metrics.jsonl) and
// tallies the confusion matrix on the validation set, drawing it to
// <output_dir>/confusion.png when it has few enough classes.
func (r *ImagesRecipe) Finish(ctx context.Context, _ *train.Trainer, _ train.Result, out io.Writer) error {
	cfg := r.cfg
	res := ImagesResult{DataWait: r.data.total, DataBatches: r.data.batches}
	res.TrainImagesPerSec = stepThroughput(cfg.OutputDir, r.start)
	pred, truth, perSec, err := predictBatches(ctx, r.clf, r.evalBatches, cfg.BatchSize)
	if err != nil {
		return err
	}
	if res.Confusion, err = NewConfusion(r.labels, truth, pred); err != nil {
		return err
	}
	res.InferImagesPerSec = perSec
	if note := ConfusionPNGNote(len(r.labels)); note != "" {
		fmt.Fprintf(out, "note: %s\n", note)
	} else {
		res.ConfusionPNG = filepath.Join(cfg.OutputDir, "confusion.png")
		if err := train.LeaderFirst(func() error {
			return res.Confusion.WritePNG(res.ConfusionPNG, fmt.Sprintf("confusion on %d validation images (rows: true; row-normalised)", len(truth)))
		}); err != nil {
			return err
		}
	}
	if r.clf.Pooling == vit.PoolMean {
		fmt.Fprintf(out, "note: the model %s\n", vit.MeanPoolingNote)
	}
	r.Result = res
	return nil
}

// Close stops the data loader's workers.
func (r *ImagesRecipe) Close() {
	if r.loader != nil {
		r.loader.Close()
	}
	if r.teacher != nil {
		r.teacher.close()
	}
}

// ConfusionPNGNote says why a confusion matrix of k classes is not drawn
// ("" when it is): the picture names every class on its axes and is
// readable up to heatmap.MaxTokens classes.
func ConfusionPNGNote(k int) string {
	if k <= heatmap.MaxTokens {
		return ""
	}
	return fmt.Sprintf("the confusion matrix is not drawn: %d classes, and its picture names each class on its axes, which stays readable up to %d; its numbers are printed", k, heatmap.MaxTokens)
}

// fewImages is the fewest training images of a class that is not worth a
// warning.
const fewImages = 5

// LabelSurprises lists what is surprising in a labelled set's class
// counts, for a warning before training: classes without images (the
// labels are not 0…K−1 dense: one stray IDX label 255 among ten digits
// makes 256 classes, 245 of them empty), and classes with very few images (fewer than 5, or
// under a twentieth of the median class). Each entry is one sentence.
func LabelSurprises(set datasets.ImageSet) []string {
	names := set.Labels()
	k := len(names)
	if k == 0 || set.Len() == 0 {
		return nil
	}
	counts := make([]int, k)
	for i := range set.Len() {
		if l := set.Label(i); l >= 0 && l < k {
			counts[l]++
		}
	}
	sorted := slices.Sorted(slices.Values(counts))
	median := sorted[k/2]
	var empty, few []string
	for id, n := range counts {
		switch {
		case n == 0:
			empty = append(empty, fmt.Sprintf("%q", names[id]))
		case n < fewImages || n*20 < median:
			few = append(few, fmt.Sprintf("%q (%d)", names[id], n))
		}
	}
	var out []string
	if len(empty) > 0 {
		have := "have"
		if len(empty) == 1 {
			have = "has"
		}
		out = append(out, fmt.Sprintf("%d of its %d classes %s no images: %s; the labels are not 0…%d dense. "+
			"A stray label (an IDX label 255 makes 256 classes) or too many --label-names is the usual cause; the model gets a head of %d classes all the same",
			len(empty), k, have, shortNames(empty), k-1, k))
	}
	if len(few) > 0 {
		classes := "classes have"
		if len(few) == 1 {
			classes = "class has"
		}
		out = append(out, fmt.Sprintf("%d %s very few images (the median class has %d): %s", len(few), classes, median, shortNames(few)))
	}
	return out
}

// resolvedPath is p made absolute with its symbolic links resolved, so
// that a resume compares paths, not spellings ("" stays "").
func resolvedPath(p string) string {
	if p == "" {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// baseSet is the set under subsets (a held-out split), for statistics.
func baseSet(s datasets.ImageSet) datasets.ImageSet {
	if sub, ok := s.(*datasets.Subset); ok {
		return baseSet(sub.Set)
	}
	return s
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

func hasProcessor(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, datasets.ProcessorConfigFile))
	return err == nil
}

// schedule is the learning rate Args name (train.Args.Schedule): linear
// warmup, then DeiT's cosine (timm's CosineLRScheduler without restarts)
// down to min_lr, or linear decay to 0. The cosine's floor is at most the
// peak, and its warmup leaves it at least one step.
func (c ImagesConfig) schedule() (train.Schedule, error) {
	a := c.Args
	if a.LRSchedulerType == "cosine" {
		a.MinLR, a.WarmupSteps = min(a.MinLR, a.LearningRate), min(a.WarmupSteps, a.MaxSteps-1)
	}
	return a.Schedule("cosine")
}

// describeAugment lists the augmentations that are on.
func (c ImagesConfig) describeAugment() string {
	var on []string
	if c.ResizedCrop {
		on = append(on, fmt.Sprintf("random resized crop (scale %g–%g)", c.Scale[0], c.Scale[1]))
	} else if c.Padding > 0 {
		on = append(on, fmt.Sprintf("random crop with %d px padding", c.Padding))
	}
	if c.FlipProb > 0 {
		on = append(on, fmt.Sprintf("flip p %g", c.FlipProb))
	}
	if c.EraseProb > 0 {
		on = append(on, fmt.Sprintf("random erasing p %g", c.EraseProb))
	}
	if c.MixupAlpha > 0 {
		on = append(on, fmt.Sprintf("mixup α %g", c.MixupAlpha))
	}
	if c.CutmixAlpha > 0 {
		on = append(on, fmt.Sprintf("cutmix α %g", c.CutmixAlpha))
	}
	if c.LabelSmoothing > 0 {
		on = append(on, fmt.Sprintf("label smoothing %g", c.LabelSmoothing))
	}
	if len(on) == 0 {
		return "none"
	}
	return strings.Join(on, ", ")
}

// buildImageClassifier makes the classifier for labels, new (a preset) or
// from init_from (fresh weights with scratch), and its image processor's
// starting settings (size and resampling set; mean and std the
// checkpoint's or the default). from says where the weights come from.
func buildImageClassifier(cfg ImagesConfig, labels []string, out io.Writer) (*vit.ForImageClassification, *datasets.ImageProcessor, string, error) {
	opts := []vit.Option{vit.StoreOption(layers.WithSeed(cfg.Seed)), vit.WithPooling(vit.Pooling(cfg.Pool))}
	pc := datasets.DefaultProcessorConfig()
	pc.ImageMean, pc.ImageStd = []float64{0.5}, []float64{0.5} // every channel
	var clf *vit.ForImageClassification
	var from string
	if cfg.InitFrom == "" {
		c, err := cfg.newModelConfig()
		if err != nil {
			return nil, nil, "", err
		}
		m, err := vit.New(cfg.studentConfig(c), opts...)
		if err != nil {
			return nil, nil, "", fmt.Errorf("finetune: model %s: %w", cfg.Model, err)
		}
		if clf, err = cfg.newHead(m, labels); err != nil {
			return nil, nil, "", fmt.Errorf("finetune: %w", err)
		}
		from = fmt.Sprintf("new weights (the %s preset, seed %d)", cmp(cfg.Model, "fashion"), cfg.Seed)
	} else {
		lo := []models.LoadOption{models.WithLabels(labels...), vit.WithImageSize(cfg.ImageSize, layers.ResampleMethod(cfg.PositionResample))}
		for _, o := range opts {
			lo = append(lo, o)
		}
		c, rep, err := cfg.loadStudent(lo)
		if err != nil {
			return nil, nil, "", fmt.Errorf("finetune: init_from: %w", err)
		}
		if hasProcessor(cfg.InitFrom) {
			if pc, err = datasets.ReadProcessorConfig(cfg.InitFrom); err != nil {
				return nil, nil, "", fmt.Errorf("finetune: init_from: %w", err)
			}
		}
		if cfg.Scratch {
			mc := c.Config
			mc.ID2Label = nil
			m, err := vit.New(mc, opts...)
			if err != nil {
				return nil, nil, "", fmt.Errorf("finetune: %w", err)
			}
			if clf, err = cfg.newHead(m, labels); err != nil {
				return nil, nil, "", fmt.Errorf("finetune: %w", err)
			}
			from = fmt.Sprintf("fresh weights (scratch, seed %d) in the architecture of %s", cfg.Seed, cfg.InitFrom)
		} else {
			clf = c
			from = "the weights of " + cfg.InitFrom
			printReport(out, cfg.InitFrom, rep)
		}
	}
	pc.DoResize = true
	pc.Size = datasets.ImageSize{Height: clf.Config.ImageSize, Width: clf.Config.ImageSize}
	pc.DoCenterCrop, pc.CropSize = false, nil
	proc, err := datasets.NewImageProcessor(pc, clf.Config.NumChannels)
	if err != nil {
		return nil, nil, "", fmt.Errorf("finetune: %w", err)
	}
	return clf, proc, from, nil
}

// newModelConfig is the configuration of a new model: the preset with
// image_size, patch_size and num_channels set when given.
func (cfg ImagesConfig) newModelConfig() (vit.Config, error) {
	c, err := modelConfig(cfg.Model)
	if err != nil {
		return c, err
	}
	if cfg.ImageSize > 0 {
		c.ImageSize = cfg.ImageSize
	}
	if cfg.PatchSize > 0 {
		c.PatchSize, c.EncoderStride = cfg.PatchSize, cfg.PatchSize
	}
	if cfg.NumChannels > 0 {
		c.NumChannels = cfg.NumChannels
	}
	return c, nil
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// printReport says how a checkpoint was fitted to the classifier.
func printReport(out io.Writer, dir string, r vit.LoadReport) {
	if len(r.Dropped) > 0 {
		// By prefix: an MAE decoder is dozens of tensors.
		var groups []string
		count := map[string]int{}
		for _, k := range r.Dropped {
			p, _, _ := strings.Cut(k, ".")
			if count[p] == 0 {
				groups = append(groups, p)
			}
			count[p]++
		}
		for i, p := range groups {
			if count[p] == 1 {
				groups[i] = r.Dropped[slices.IndexFunc(r.Dropped, func(k string) bool { return k == p || strings.HasPrefix(k, p+".") })]
			} else {
				groups[i] = fmt.Sprintf("%s.* (%d)", p, count[p])
			}
		}
		fmt.Fprintf(out, "init_from %s: dropped %d tensors the classifier does not use: %s\n", dir, len(r.Dropped), strings.Join(groups, ", "))
	}
	if len(r.Created) > 0 {
		fmt.Fprintf(out, "init_from %s: created %s (new, initialised)\n", dir, strings.Join(r.Created, ", "))
	}
	if r.Resampled != "" {
		fmt.Fprintf(out, "init_from %s: %s\n", dir, r.Resampled)
	}
}

// stepThroughput is images per second over the run's steps after step
// start, from metrics.jsonl (each step's targets and seconds, waits for
// data included); 0 if it cannot be read.
func stepThroughput(dir string, start int) float64 {
	f, err := os.Open(filepath.Join(dir, train.MetricsFile))
	if err != nil {
		return 0
	}
	defer f.Close()
	var n, secs float64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r struct {
			Step    int     `json:"step"`
			Targets int     `json:"targets"`
			Seconds float64 `json:"seconds"`
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Step > start {
			n += float64(r.Targets)
			secs += r.Seconds
		}
	}
	if secs == 0 {
		return 0
	}
	return n / secs
}

// predictBatches runs the classifier on the batches (each padded to b
// rows in one graph) and returns the predicted and true class ids of the
// real rows, and the images per second of the forward passes. Data-parallel
// ranks each run their share of the batches and gather the ids, so every
// rank returns all of them; the rate is that of this rank's share.
func predictBatches(ctx context.Context, clf *vit.ForImageClassification, batches []*datasets.ImageBatch, b int) (pred, truth []int, perSec float64, err error) {
	c := clf.Config
	h, w := c.ImageSize, c.ImageSize // the processor's size (the batches')
	if len(batches) > 0 {
		h, w = batches[0].H, batches[0].W
	}
	g := clf.Store.NewGraph()
	px := g.Input("pixel_values", b, c.NumChannels, h, w)
	logits, err := clf.Logits(g, px)
	if err != nil {
		return nil, nil, 0, err
	}
	var v gorgonia.Value
	gorgonia.Read(logits, &v)
	vm, err := g.Machine()
	if err != nil {
		return nil, nil, 0, err
	}
	defer vm.Close()
	k := len(clf.Labels)
	var took time.Duration
	lo, hi := train.ShardRange(len(batches))
	for _, ib := range batches[lo:hi] {
		if err := ctx.Err(); err != nil {
			return nil, nil, 0, fmt.Errorf("finetune: evaluation: %w", err)
		}
		vb := toVit(ib, b)
		if len(vb.Pixels) != b*c.NumChannels*h*w {
			return nil, nil, 0, fmt.Errorf("finetune: evaluation: a batch of %d×%d×%d images for a model of %d×%d×%d", ib.C, ib.H, ib.W, c.NumChannels, h, w)
		}
		setPixels(px, vb.Pixels)
		t0 := time.Now()
		if err := vm.RunAll(); err != nil {
			return nil, nil, 0, fmt.Errorf("finetune: evaluation: %w", err)
		}
		took += time.Since(t0)
		scores, err := layers.Float64s(v)
		vm.Reset()
		if err != nil {
			return nil, nil, 0, fmt.Errorf("finetune: evaluation: %w", err)
		}
		for i, l := range ib.Labels {
			row := scores[i*k : (i+1)*k]
			best := 0
			for j, s := range row {
				if s > row[best] {
					best = j
				}
			}
			pred, truth = append(pred, best), append(truth, l)
		}
	}
	perSec = float64(len(truth)) / max(took.Seconds(), 1e-9)
	if truth, pred, err = gatherLabels(truth, pred); err != nil {
		return nil, nil, 0, err
	}
	return pred, truth, perSec, nil
}

func setPixels(n *gorgonia.Node, v []float32) {
	switch d := n.Value().Data().(type) {
	case []float32:
		copy(d, v)
	case []float64:
		for i, x := range v {
			d[i] = float64(x)
		}
	}
}

// ImagesEval is an image classifier's scores on a labelled set.
type ImagesEval struct {
	Confusion         Confusion
	InferImagesPerSec float64
}

// EvalImages scores the image classifier checkpoint (config.json with
// id2label, model.safetensors, preprocessor_config.json) on a labelled
// set (see OpenImageData; an IDX set's ids and a CSV's or ImageFolder's
// names are the checkpoint's labels): accuracy, macro-F1, the confusion
// matrix and the forward throughput. pool, when not "", must be the
// pooling the checkpoint was saved with (see vit.PipelineOptions).
func EvalImages(ctx context.Context, checkpoint, data, labels string, batch, workers int, pool string) (ImagesEval, error) {
	if batch <= 0 || workers < 0 {
		return ImagesEval{}, fmt.Errorf("eval: batch size %d must be positive and workers %d not negative", batch, workers)
	}
	if err := datasets.CheckWorkers(workers); err != nil {
		return ImagesEval{}, fmt.Errorf("eval: %w", err)
	}
	clf, proc, err := vit.LoadPipeline(checkpoint, vit.PipelineOptions{Pool: pool})
	if err != nil {
		return ImagesEval{}, err
	}
	if err := clf.CheckStep(batch, false); err != nil {
		return ImagesEval{}, fmt.Errorf("eval: %w", err)
	}
	set, err := OpenImageData(data, labels, clf.Labels, clf.Config.PatchSize, "data")
	if err != nil {
		return ImagesEval{}, fmt.Errorf("eval: %w", err)
	}
	if len(set.Labels()) != len(clf.Labels) {
		return ImagesEval{}, fmt.Errorf("eval: %s has %d classes, the checkpoint %d", data, len(set.Labels()), len(clf.Labels))
	}
	batches, err := datasets.LoadAll(ctx, set, proc, batch, max(workers, 1))
	if err != nil {
		return ImagesEval{}, fmt.Errorf("eval: %w", err)
	}
	pred, truth, perSec, err := predictBatches(ctx, clf, batches, batch)
	if err != nil {
		return ImagesEval{}, err
	}
	conf, err := NewConfusion(clf.Labels, truth, pred)
	if err != nil {
		return ImagesEval{}, err
	}
	return ImagesEval{Confusion: conf, InferImagesPerSec: perSec}, nil
}

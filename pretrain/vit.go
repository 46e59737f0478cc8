package pretrain

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/vit"
	"github.com/d73a19ff/zoo/train"
)

// MAEConfig is the configuration of MAE pretraining of a ViT (He et al.
// 2022). The training keys follow MAE's main_pretrain.py (blr, min_lr,
// warmup, weight_decay, mask_ratio and norm_pix_loss in the model section)
// and the zoo's other pipelines; the model section is a Hugging Face
// ViTMAEConfig and the processor section a ViTImageProcessor's
// preprocessor_config.json.
type MAEConfig struct {
	// Data is the images: an IDX images file (gzipped or not: MNIST,
	// Fashion-MNIST), a folder of class folders (ImageFolder) or a CSV of
	// path,label. Labels are never used.
	Data string `json:"data"`
	// Labels is the IDX labels file paired with Data; optional (it is only
	// checked to hold one label per image).
	Labels string           `json:"labels"`
	Model  vit.ViTMAEConfig `json:"model"`
	// Processor is the image processor (a ViTImageProcessor's settings).
	// Its size left 0×0 is the model's image_size; its image_mean and
	// image_std left empty are the data's own (an IDX set's pixel mean and
	// std), else ViTImageProcessor's 0.5 (see ResolveProcessor).
	Processor datasets.ProcessorConfig `json:"processor"`
	// Augment is the per-image augmentation: MAE's random resized crop
	// (scale 0.2 to 1, bicubic in the paper; the processor's resample
	// here) and horizontal flip.
	Augment     datasets.Augment `json:"augment"`
	ValFraction float64          `json:"val_fraction"` // share of the images held out (seeded)
	EvalBatches int              `json:"eval_batches"` // validation batches per evaluation; 0: all (whole batches)
	train.Args
	// BaseLR is MAE's base learning rate (blr): the peak rate is
	// blr × batch_size × gradient_accumulation_steps / 256 unless LR is set.
	BaseLR float64 `json:"blr"`
	// Pictures is the number of validation images drawn in the
	// reconstruction grid at each evaluation (0: none).
	Pictures int `json:"pictures"`
	Workers  int `json:"workers"` // image loader goroutines; 0: 1
}

// DefaultMAE pretrains MAEFashion (the Fashion encoder, a 64-wide 2-layer
// decoder, 75% masking) on 28×28 grey images normalised with the data's
// own mean and std (Fashion-MNIST's 0.2860 and 0.3530 on Fashion-MNIST),
// at the model's image size, with MAE's recipe (main_pretrain.py)
// scaled down: random resized crops of scale (0.2, 1) and flips, AdamW with
// betas (0.9, 0.95) and weight decay 0.05, the linear scaling rule
// lr = blr × batch/256, linear warmup then a cosine to 0. blr is 1.5e-3,
// ten times the paper's 1.5e-4, because the schedule is some ten epochs
// instead of 800: on Fashion-MNIST at batch 128, 150 steps at the paper's
// rate (7.5e-5) left the held-out MSE at 0.95, above the mean predictor's
// 0.68, and at 1.5e-3 brought it to 0.63.
func DefaultMAE() MAEConfig {
	p := datasets.DefaultProcessorConfig()
	p.Size = datasets.ImageSize{}      // the model's image_size
	p.ImageMean, p.ImageStd = nil, nil // the data's
	aug := datasets.DefaultAugment()
	aug.Scale = [2]float64{0.2, 1}
	return MAEConfig{
		Model: vit.MAEFashion(), Processor: p, Augment: aug, ValFraction: 0.02, EvalBatches: 10,
		BaseLR: 1.5e-3, Pictures: 8, Workers: 2,
		Args: train.Args{BatchSize: 256, GradientAccumulationSteps: 1, MaxSteps: 2000, LRSchedulerType: "cosine", WarmupSteps: 100, WeightDecay: 0.05,
			AdamBeta1: 0.9, AdamBeta2: 0.95, AdamEpsilon: 1e-8, EvalSteps: 250, SaveSteps: 250, Seed: 12345,
			OutputDir: filepath.Join("runs", "vit-mae")},
	}
}

// ReadMAEConfig reads a JSON config file over base; unknown keys and wrong
// types are errors, and the model section refuses what it does not
// implement, by name.
func ReadMAEConfig(path string, base MAEConfig) (MAEConfig, error) {
	return train.ReadConfig(path, base, func(c *MAEConfig) *train.Args { return &c.Args }, "model", func(c *MAEConfig) any { return &c.Model })
}

// PeakLR is the peak learning rate: LR, or blr × the images per step / 256
// (MAE's linear scaling rule).
func (c MAEConfig) PeakLR() float64 {
	if c.LearningRate > 0 {
		return c.LearningRate
	}
	return c.BaseLR * float64(c.BatchSize*max(c.GradientAccumulationSteps, 1)) / 256
}

// Validate reports settings that cannot run: the training arguments
// (train.Args.Validate), then MAE's own.
func (c MAEConfig) Validate() error {
	if c.Data == "" {
		return fmt.Errorf("config: no data: give --data (an IDX images file, a folder of class folders, or a CSV of path,label)")
	}
	if err := c.Args.Validate(); err != nil {
		return err
	}
	switch {
	case c.WarmupSteps >= c.MaxSteps: // stricter than Args: the cosine needs steps after the warmup
		return fmt.Errorf("config: warmup_steps %d must be in [0, max_steps %d): lower --warmup-steps", c.WarmupSteps, c.MaxSteps)
	case !(c.ValFraction > 0 && c.ValFraction < 1):
		return fmt.Errorf("config: val_fraction %g must be in (0, 1)", c.ValFraction)
	case c.EvalBatches < 0 || c.Pictures < 0 || c.Workers < 0:
		return fmt.Errorf("config: eval_batches %d, pictures %d and workers %d must not be negative", c.EvalBatches, c.Pictures, c.Workers)
	case c.Workers > datasets.MaxLoaderWorkers:
		return fmt.Errorf("config: %w", datasets.CheckWorkers(c.Workers))
	case !(c.PeakLR() > 0) || math.IsInf(c.PeakLR(), 0):
		return fmt.Errorf("config: the learning rate %g (learning_rate, or blr %g × batch / 256) must be positive", c.PeakLR(), c.BaseLR)
	case !(c.MinLR >= 0 && c.MinLR <= c.PeakLR()):
		return fmt.Errorf("config: min_lr %g must be in [0, the peak rate %g]", c.MinLR, c.PeakLR())
	}
	if err := c.Model.Validate(); err != nil {
		return fmt.Errorf("config: model: %w", err)
	}
	pc := c.ResolveProcessor(nil)
	if err := pc.Validate(); err != nil {
		return fmt.Errorf("config: processor: %w", err)
	}
	if err := c.Augment.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if h, w := pc.Size.Height, pc.Size.Width; pc.CropSize != nil && pc.DoCenterCrop {
		h, w = pc.CropSize.Height, pc.CropSize.Width
		if h != c.Model.ImageSize || w != c.Model.ImageSize {
			return fmt.Errorf("config: the processor's crop_size %d×%d is not the model's image_size %d: set them equal", h, w, c.Model.ImageSize)
		}
	} else if h != c.Model.ImageSize || w != c.Model.ImageSize {
		return fmt.Errorf("config: the processor's size %d×%d is not the model's image_size %d: set processor.size to %d×%d", h, w, c.Model.ImageSize, c.Model.ImageSize, c.Model.ImageSize)
	}
	return nil
}

// ResolveProcessor is the processor the run uses: c.Processor with a 0×0
// size set to the model's image_size, and each of image_mean and
// image_std left empty set to the data's own (an IDX set's pixel mean
// and std, rounded to 4 places; ViTImageProcessor's 0.5 for other sets or
// a nil set), so that a model pretrained on MNIST, or on colour photos,
// is not normalised with Fashion-MNIST's numbers.
func (c MAEConfig) ResolveProcessor(set datasets.ImageSet) datasets.ProcessorConfig {
	p := c.Processor
	if p.Size == (datasets.ImageSize{}) {
		p.Size = datasets.ImageSize{Height: c.Model.ImageSize, Width: c.Model.ImageSize}
	}
	mean, std := 0.5, 0.5
	if s, ok := set.(*datasets.IDXSet); ok && len(s.Images.Pix) > 0 {
		m, sd := s.PixelStats()
		mean, std = math.Round(m*1e4)/1e4, math.Round(sd*1e4)/1e4
	}
	if len(p.ImageMean) == 0 {
		p.ImageMean = []float64{mean}
	}
	if len(p.ImageStd) == 0 {
		p.ImageStd = []float64{std}
	}
	return p
}

// MAEResult is what an MAE pretraining run produced: the engine's result
// (ValLoss is the held-out masked-patch MSE), the images used, and the
// MSE of the mean predictor on the held-out images (every masked value
// predicted by the mean of its patch's targets over the held-out set;
// with norm_pix_loss the targets' own zero mean, MSE ≈ 1), the baseline
// a reconstruction must beat.
type MAEResult struct {
	train.Result
	Images, ValImages int
	BaselineMSE       float64
	// Picture is the latest reconstruction grid, "" without pictures.
	Picture string
}

// RunViTMAE pretrains a ViT as a masked autoencoder as cfg says, writing
// checkpoints (ViTMAEForPreTraining: config.json, model.safetensors,
// preprocessor_config.json), metrics.jsonl, loss.png and, at each
// evaluation, reconstructions-step-NNNNNN.png and reconstructions.png (a
// grid of originals, masked inputs, reconstructions and reconstructions
// with the visible patches pasted back) under cfg.OutputDir, and the
// progress to out. It is train.Run with the MAE recipe (MAERecipe).
//
// A new run records its data (by content, datasets.Fingerprint), model,
// processor and augmentation in run.json; a resume (cfg.Resume) continues
// the latest checkpoint's model and refuses, naming each difference, what
// differs from run.json, unless cfg.Force.
func RunViTMAE(ctx context.Context, cfg MAEConfig, out io.Writer) (*MAEResult, error) {
	r, err := NewMAERecipe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	res, err := train.Run(ctx, r.cfg.Args, r, out)
	if err != nil {
		return nil, err
	}
	return &MAEResult{Result: res, Images: r.trainSet.Len(), ValImages: r.valSet.Len(), BaselineMSE: r.baseline, Picture: r.picture}, nil
}

// MAERecipe is MAE pretraining of a ViT as a train.Recipe: the images, the
// processor, a ViTMAEForPreTraining, its task and batches (with the
// masking noise), and the reconstruction pictures drawn at each
// evaluation. Use it with train.Run, or RunViTMAE, and Close it after:
// Build starts the image loader's goroutines.
type MAERecipe struct {
	cfg              MAEConfig
	set              datasets.ImageSet
	proc             *datasets.ImageProcessor
	trainSet, valSet *datasets.Subset
	m                *vit.ViTMAEForPreTraining
	evalImgs         []*datasets.ImageBatch
	loader           *datasets.ImageLoader
	baseline         float64 // the mean predictor's MSE, set by Build
	picture          string  // the latest reconstruction grid
}

// NewMAERecipe checks cfg, opens the images, makes the processor and
// splits the images, refusing a validation split smaller than a batch:
// the errors a user should see before anything is written.
func NewMAERecipe(_ context.Context, cfg MAEConfig) (*MAERecipe, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	set, err := OpenImages(cfg.Data, cfg.Labels)
	if err != nil {
		return nil, err
	}
	proc, err := datasets.NewImageProcessor(cfg.ResolveProcessor(set), cfg.Model.NumChannels)
	if err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	trainSet, valSet := splitImages(set, cfg.ValFraction, cfg.Seed)
	if valSet.Len() < cfg.BatchSize {
		return nil, fmt.Errorf("pretrain: the validation split holds %d images, fewer than a batch of %d: raise val_fraction, use more images or lower batch_size", valSet.Len(), cfg.BatchSize)
	}
	return &MAERecipe{cfg: cfg, set: set, proc: proc, trainSet: trainSet, valSet: valSet}, nil
}

// Record is what run.json records: the data by content
// (datasets.Fingerprint: replaced files are refused at a resume, the same
// files by another path are not), the model, the processor and the
// augmentation.
func (r *MAERecipe) Record(ctx context.Context) (train.Record, error) {
	fp, err := datasets.Fingerprint(ctx, r.set)
	if err != nil {
		return nil, fmt.Errorf("pretrain: data: %w", err)
	}
	now := train.Record{}
	if err := now.Set("data", fp); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		prefix string
		v      any
	}{{"model.", r.cfg.Model}, {"processor.", r.proc.Config}, {"augment.", r.cfg.Augment}} {
		if err := now.SetFields(f.prefix, f.v); err != nil {
			return nil, err
		}
	}
	return now, nil
}

// Setup loads the checkpoint's model on a resume (its config is the
// run's) and the validation images. It checks no memory.
func (r *MAERecipe) Setup(ctx context.Context, resume string, _ io.Writer) (train.MemoryNeed, error) {
	var err error
	if resume != "" {
		if r.m, _, err = vit.LoadViTMAEForPreTraining(resume); err != nil {
			return train.MemoryNeed{}, fmt.Errorf("pretrain: resume: %w", err)
		}
		r.cfg.Model = r.m.Config
	}
	if r.evalImgs, err = datasets.LoadAll(ctx, r.valSet, r.proc, r.cfg.BatchSize, max(r.cfg.Workers, 1)); err != nil {
		return train.MemoryNeed{}, fmt.Errorf("pretrain: validation images: %w", err)
	}
	return train.MemoryNeed{}, nil
}

// Build makes the model (unless Setup loaded one), the validation batches
// and the mean predictor's MSE on them, the training image loader, the
// task and the schedule (the peak rate is PeakLR: blr's scaling rule).
func (r *MAERecipe) Build(ctx context.Context) (train.Plan, error) {
	cfg := r.cfg
	var err error
	if r.m == nil {
		if r.m, err = vit.NewViTMAEForPreTraining(cfg.Model, vit.StoreOption(layers.WithSeed(cfg.Seed))); err != nil {
			return train.Plan{}, err
		}
	}
	mc := r.m.Config
	n, masked := mc.NumPatches(), cfg.BatchSize*(mc.NumPatches()-mc.LenKeep())
	var eval []train.Batch
	var baseline []float64
	for i, b := range r.evalImgs {
		if b.B < cfg.BatchSize || cfg.EvalBatches > 0 && i >= cfg.EvalBatches {
			break // whole batches only
		}
		eval = append(eval, MAEBatch{Pixels: b.Pixels, Noise: MaskNoise(cfg.Seed, -1, i, cfg.BatchSize, n), Masked: masked})
		t, err := mc.Patchify(b.Pixels, b.B)
		if err != nil {
			return train.Plan{}, err
		}
		if mc.NormPixLoss {
			vit.NormPixTargets(t, mc.PatchValues())
		}
		baseline = append(baseline, t...)
	}
	r.baseline = meanPredictorMSE(baseline, n, mc.PatchValues())
	if r.loader, err = datasets.NewImageLoader(ctx, r.trainSet, r.proc, datasets.LoaderConfig{BatchSize: cfg.BatchSize, Workers: cfg.Workers, Seed: cfg.Seed, Augment: &cfg.Augment, Keep: train.KeepBatch}); err != nil {
		return train.Plan{}, fmt.Errorf("pretrain: %w", err)
	}
	data := &maeData{loader: r.loader, eval: eval, seed: cfg.Seed, b: cfg.BatchSize, n: n, masked: masked, accumulate: max(cfg.GradientAccumulationSteps, 1) * train.Ranks()}
	if k := min(cfg.Pictures, r.evalImgs[0].B); k > 0 {
		pix := r.evalImgs[0].Pixels[:k*r.proc.Len()]
		noise := MaskNoise(cfg.Seed, -2, 0, k, n)
		data.onEval = func(step int) error {
			return train.LeaderFirst(func() error {
				path, err := writeReconstructions(r.m, r.proc, pix, noise, k, cfg.OutputDir, step)
				r.picture = path
				return err
			})
		}
	}
	args := cfg.Args
	args.LearningRate = cfg.PeakLR()
	sched, err := args.Schedule("cosine")
	if err != nil {
		return train.Plan{}, err
	}
	return train.Plan{
		Task: &MAETask{Model: r.m, B: cfg.BatchSize, SaveExtra: r.proc.Config.Save}, Data: data, Schedule: sched,
		Unit: "patch", // MAE's targets are the masked patches
		Summary: fmt.Sprintf("vit_mae: %d parameters (encoder %d layers × %d wide, decoder %d layers × %d wide), %d patches of which %d seen (mask_ratio %g), norm_pix_loss %v\n"+
			"data: %d training images, %d held out (%d evaluated); batch %d, peak learning rate %.3g; mean-predictor MSE on the held-out masked patches %.4f",
			r.m.NumParams(), mc.NumHiddenLayers, mc.HiddenSize, mc.DecoderNumHiddenLayers, mc.DecoderHiddenSize, n, mc.LenKeep(), mc.MaskRatio, mc.NormPixLoss,
			r.trainSet.Len(), r.valSet.Len(), len(eval)*cfg.BatchSize, cfg.BatchSize, cfg.PeakLR(), r.baseline),
	}, nil
}

// Finish does nothing: each evaluation drew the reconstructions.
func (r *MAERecipe) Finish(context.Context, *train.Trainer, train.Result, io.Writer) error {
	return nil
}

// Close stops the training image loader's goroutines (started by
// Build). It is safe to call more than once, and before Build.
func (r *MAERecipe) Close() error {
	if r.loader != nil {
		r.loader.Close()
		r.loader = nil
	}
	return nil
}

// meanPredictorMSE is the MSE of predicting each value of a patch (B·N
// rows of p values, in patch order) by the mean of that value over the
// set, at the same patch position: a reconstruction that learned nothing
// of the image beats nothing better than this.
func meanPredictorMSE(t []float64, n, p int) float64 {
	if len(t) == 0 {
		return math.NaN()
	}
	w := n * p
	imgs := len(t) / w
	mean := make([]float64, w)
	for i := 0; i < imgs; i++ {
		for j := 0; j < w; j++ {
			mean[j] += t[i*w+j]
		}
	}
	var ss float64
	for j := range mean {
		mean[j] /= float64(imgs)
	}
	for i := 0; i < imgs; i++ {
		for j := 0; j < w; j++ {
			d := t[i*w+j] - mean[j]
			ss += d * d
		}
	}
	return ss / float64(len(t))
}

// OpenImages opens an image set for pretraining: an IDX images file (with
// its labels file, or without: then every image is labelled "image"), a
// folder of class folders, or a CSV of path,label.
func OpenImages(data, labels string) (datasets.ImageSet, error) {
	fi, err := os.Stat(data)
	if err != nil {
		return nil, fmt.Errorf("pretrain: data: %w", err)
	}
	switch {
	case fi.IsDir():
		s, err := datasets.OpenImageFolder(data)
		if err != nil {
			return nil, fmt.Errorf("pretrain: %w", err)
		}
		return s, nil
	case strings.EqualFold(filepath.Ext(data), ".csv"):
		s, err := datasets.ReadImageCSV(data, nil)
		if err != nil {
			return nil, fmt.Errorf("pretrain: %w", err)
		}
		return s, nil
	}
	if labels != "" {
		s, err := datasets.OpenIDX(data, labels, nil)
		if err != nil {
			return nil, fmt.Errorf("pretrain: %w", err)
		}
		return s, nil
	}
	imgs, err := datasets.ReadIDXImages(data)
	if err != nil {
		return nil, fmt.Errorf("pretrain: %s: %w (give an IDX images file, a folder of class folders, or a CSV of path,label)", data, err)
	}
	s, err := datasets.NewIDXSet(imgs, make([]uint8, imgs.N), []string{"image"})
	if err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	return s, nil
}

// splitImages holds out a seeded fraction of set (at least one image).
func splitImages(set datasets.ImageSet, fraction float64, seed uint64) (trainSet, valSet *datasets.Subset) {
	perm := rand.New(rand.NewPCG(seed, 0x7a1)).Perm(set.Len())
	nv := max(1, int(math.Round(fraction*float64(set.Len()))))
	nv = min(nv, set.Len()-1)
	return &datasets.Subset{Set: set, Indices: perm[nv:]}, &datasets.Subset{Set: set, Indices: perm[:nv]}
}

// maeData serves the engine MAE batches: the loader's images with their
// masking noise (MaskNoise of the batch's epoch and index), and the
// fixed validation batches. At each evaluation it first calls onEval with
// the step, to draw the reconstructions.
type maeData struct {
	loader     *datasets.ImageLoader
	eval       []train.Batch
	seed       uint64
	b, n       int
	masked     int
	accumulate int
	served     int // micro-batches served or skipped: the step is served / accumulate (of all ranks)
	onEval     func(step int) error
}

type maeState struct {
	Loader datasets.LoaderState `json:"loader"`
	Served int                  `json:"served"`
}

func (d *maeData) Next() (train.Batch, error) {
	b, err := d.loader.Next()
	if err != nil {
		return nil, err
	}
	d.served++
	return MAEBatch{Pixels: b.Pixels, Noise: MaskNoise(d.seed, b.Epoch, b.Index, d.b, d.n), Masked: d.masked}, nil
}

// Skip passes over a batch another data-parallel rank trains on, without
// decoding it (train.Skipper).
func (d *maeData) Skip() error {
	if err := d.loader.Skip(); err != nil {
		return err
	}
	d.served++
	return nil
}

func (d *maeData) Eval() ([]train.Batch, error) {
	if d.onEval != nil {
		if err := d.onEval(d.served / d.accumulate); err != nil {
			return nil, err
		}
	}
	return d.eval, nil
}

func (d *maeData) State() ([]byte, error) {
	return json.Marshal(maeState{Loader: d.loader.State(), Served: d.served})
}

func (d *maeData) Restore(b []byte) error {
	var s maeState
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("pretrain: data state: %w", err)
	}
	if err := d.loader.Restore(s.Loader); err != nil {
		return err
	}
	d.served = s.Served
	return nil
}

// pictureScale is how many screen pixels a pixel of a small image takes
// in the reconstruction grid: 28×28 images are drawn 112×112.
func pictureScale(size int) int {
	return max(1, 112/size)
}

// writeReconstructions draws k validation images in four rows, originals,
// masked inputs (masked patches grey), reconstructions, and
// reconstructions with the visible patches pasted back (as MAE's
// visualisation), each pixel scaled up (pictureScale), and writes it
// atomically to dir/reconstructions-step-NNNNNN.png and
// dir/reconstructions.png. Pixels are unnormalised with the processor's
// mean and std. It returns the latter's path.
func writeReconstructions(m *vit.ViTMAEForPreTraining, proc *datasets.ImageProcessor, pixels []float32, noise []float64, k int, dir string, step int) (string, error) {
	r, err := m.Reconstruct(pixels, noise, k)
	if err != nil {
		return "", fmt.Errorf("pretrain: reconstructions: %w", err)
	}
	c := m.Config
	s, ch, p := c.ImageSize, c.NumChannels, c.PatchSize
	g := s / p
	sc := pictureScale(s)
	const gap = 4
	cell := s*sc + gap
	img := image.NewRGBA(image.Rect(0, 0, k*cell+gap, 4*cell+gap))
	for i := range img.Pix {
		img.Pix[i] = 255 // white background
	}
	mean, std := proc.Config.ImageMean, proc.Config.ImageStd
	unnorm := func(v float64, c int) uint8 {
		mu, sd := 0.0, 1.0
		if proc.Config.DoNormalize {
			mu, sd = mean[min(c, len(mean)-1)], std[min(c, len(std)-1)]
		}
		x := v*sd + mu // the processor's input, 0…255, or 0…1 rescaled
		if proc.Config.DoRescale && proc.Config.RescaleFactor > 0 {
			x /= proc.Config.RescaleFactor
		}
		return uint8(math.Max(0, math.Min(255, math.Round(x))))
	}
	for i := 0; i < k; i++ {
		for row := 0; row < 4; row++ {
			for y := 0; y < s; y++ {
				for x := 0; x < s; x++ {
					masked := r.Mask[i*g*g+(y/p)*g+x/p] == 1
					var col [3]uint8
					for cc := 0; cc < 3; cc++ {
						ci := min(cc, ch-1)
						at := ((i*ch+ci)*s+y)*s + x
						orig, rec := float64(pixels[at]), r.Reconstructed[at]
						switch {
						case row == 0 || row == 3 && !masked:
							col[cc] = unnorm(orig, ci)
						case row == 1 && masked:
							col[cc] = 128
						case row == 1:
							col[cc] = unnorm(orig, ci)
						default:
							col[cc] = unnorm(rec, ci)
						}
					}
					for dy := 0; dy < sc; dy++ {
						for dx := 0; dx < sc; dx++ {
							img.SetRGBA(gap+i*cell+x*sc+dx, gap+row*cell+y*sc+dy, color.RGBA{col[0], col[1], col[2], 255})
						}
					}
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return "", fmt.Errorf("pretrain: reconstructions: %w", err)
	}
	latest := filepath.Join(dir, "reconstructions.png")
	for _, path := range []string{filepath.Join(dir, fmt.Sprintf("reconstructions-step-%06d.png", step)), latest} {
		if err := atomicfile.WriteBytes(path, buf.Bytes()); err != nil {
			return "", fmt.Errorf("pretrain: %w", err)
		}
	}
	return latest, nil
}

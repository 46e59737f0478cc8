package vit

// This file is the one place that knows how Hugging Face stores ViT.
// Parameter names are already transformers' keys; what differs is:
//   - ViTModel checkpoints (the bare backbone) have no "vit." prefix, and
//     carry a pooler (pooler.dense), which ViTForImageClassification does
//     not build: it is dropped;
//   - ViTForMaskedImageModeling checkpoints carry
//     vit.embeddings.mask_token and a decoder (decoder.*): dropped;
//   - ViTMAEForPreTraining checkpoints (model_type vit_mae, mae_hf.go) are
//     read as their encoder (ViTMAEConfig.Encoder): the decoder (decoder.*,
//     its mask token and position table) is dropped and reported, and the
//     fixed sine-cosine vit.embeddings.position_embeddings load as the
//     classifier's (learnable) position embeddings, as transformers'
//     ViTForImageClassification.from_pretrained does with an MAE checkpoint;
//   - a checkpoint of one head loads into another, or into a classifier of
//     other labels (timm's reset_classifier): the file's head tensors the
//     model does not use are dropped and the model's head tensors the file
//     lacks keep their initial values, and both are reported (LoadReport);
//   - a checkpoint loads at another image_size with its position
//     embeddings resampled (WithImageSize), also reported.

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// LoadReport says how a checkpoint was fitted to a model, its position
// embeddings resampled included (models.LoadReport, the one report type
// of every family).
type LoadReport = models.LoadReport

// hfKeys maps ViT checkpoint keys to the model's parameter names.
type hfKeys struct {
	store *layers.Store
	// heads lets a checkpoint of another head load (see LoadReport);
	// otherwise every tensor must match, as when resuming.
	heads bool
	// newHead drops the checkpoint's classifier: the model's is new.
	newHead bool
	// positions, when not nil, receives the checkpoint's position
	// embeddings instead of loading them (they are resampled).
	positions *capturedTensor
	seen      map[string]bool // parameter names the file provides
	dropped   []string
	// scope is the backbone's: "vit" ("" too) or "deit".
	scope string
}

type capturedTensor struct {
	shape  []int
	values []float64
}

const positionKey = "vit.embeddings.position_embeddings"

// prefix is the backbone's key prefix, "vit." or "deit.".
func (k *hfKeys) prefix() string { return cmp.Or(k.scope, "vit") + "." }

// positionKey is the backbone's position embeddings' key.
func (k *hfKeys) positionKey() string { return k.prefix() + "embeddings.position_embeddings" }

func (k *hfKeys) isBackbone(name string) bool { return strings.HasPrefix(name, k.prefix()) }

// keysOf is the key map of m's store and model type.
func keysOf(m *Model) *hfKeys { return &hfKeys{store: m.Store, scope: m.Config.scope()} }

// FromFile implements layers.KeyMap.
func (k *hfKeys) FromFile(key string) (name string, transpose, skip bool) {
	name = key
	for _, p := range []string{"embeddings.", "encoder.", "layernorm.", "pooler."} {
		if strings.HasPrefix(key, p) { // a ViTModel checkpoint: no "vit." prefix
			name = k.prefix() + key
		}
	}
	if name == k.positionKey() && k.positions != nil {
		return "", false, true // CheckSkipped captures it
	}
	_, ours := k.store.Param(name)
	if k.heads && (!ours || k.newHead && !k.isBackbone(name)) {
		k.dropped = append(k.dropped, key)
		return "", false, true
	}
	if k.seen != nil {
		k.seen[name] = true
	}
	return name, false, false
}

// CheckSkipped implements layers.SkipChecker: it captures the position
// embeddings to resample.
func (k *hfKeys) CheckSkipped(key string, shape []int, values []float64) error {
	if k.positions != nil && (key == k.positionKey() || k.prefix()+key == k.positionKey()) {
		k.positions.shape, k.positions.values = slices.Clone(shape), values
	}
	return nil
}

// ToFile implements layers.KeyMap: the keys are the parameter names, as
// ViTForImageClassification's save_pretrained writes them.
func (k *hfKeys) ToFile(name string) (key string, transpose bool) { return name, false }

// Optional implements layers.OptionalKeys: when fitting another head, the
// model's head parameters may be absent; when resampling, the position
// embeddings are not loaded by key.
func (k *hfKeys) Optional(name string) bool {
	return k.heads && !k.isBackbone(name) || k.positions != nil && name == k.positionKey()
}

// load reads path into the store through k and reports what was fitted.
func (k *hfKeys) load(path string) (LoadReport, error) {
	k.seen = map[string]bool{}
	if err := k.store.LoadMapped(path, k); err != nil {
		return LoadReport{}, fmt.Errorf("vit: %w", err)
	}
	var r LoadReport
	for _, p := range k.store.Params() {
		if !k.seen[p.Name] && !(k.positions != nil && p.Name == k.positionKey()) {
			r.Created = append(r.Created, p.Name)
		}
	}
	r.Dropped = slices.Clone(k.dropped)
	sort.Strings(r.Dropped)
	return r, nil
}

// architecture is transformers' class for the model's heads, or zoo's
// name for a classifier that pools by the mean (see MeanPoolingNote).
func (m *Model) architecture() string {
	if m.Config.isDeiT() {
		return m.deitArchitecture()
	}
	if _, ok := m.Store.Param("classifier.weight"); ok {
		return classifierArch(m.Pooling)
	}
	return archModel
}

// savedConfigOf is the config Save writes: m.Config with the pooling the
// model uses.
func (m *Model) savedConfigOf() Config {
	c := m.Config
	c.Pooling = m.Pooling
	return c
}

// Save writes the model, with its head if it has one, as a Hugging Face
// ViT checkpoint: dir/config.json (architectures naming the head class)
// and dir/model.safetensors, each written atomically. The pooling is
// saved in zoo's key zoo_pooling when it is the mean (see Model).
func (m *Model) Save(dir string) error {
	if err := m.Config.checkExtra(); err != nil {
		return fmt.Errorf("vit: save: %w", err)
	}
	if err := models.SaveModel(dir, m.Config.codecOf().Saved(m.savedConfigOf(), m.architecture()), m.Store, keysOf(m)); err != nil {
		return fmt.Errorf("vit: %w", err)
	}
	return nil
}

// LoadWeights reads a model.safetensors written by Save (or by
// transformers for the same head) into the model, strictly: every
// parameter must be in the file and every tensor must fit.
func (m *Model) LoadWeights(path string) error {
	_, err := keysOf(m).load(path)
	return err
}

// WithImageSize makes a Load function build the model for images of
// size × size and resample the checkpoint's position embeddings to the
// new grid (layers.ResamplePositions) by method, when size is not the
// checkpoint's image_size (0: the checkpoint's). With the default method
// the model computes what transformers computes when the checkpoint runs
// on images of that size with interpolate_pos_encoding=True
// (transformers resamples on every forward pass; here it is done once, at
// load, and saved so); transformers' from_pretrained(image_size=…,
// ignore_mismatched_sizes=True) would instead initialise new position
// embeddings. method is layers.ResampleHF ("" is it, the default: every
// checkpoint this package reads is in Hugging Face's form, and
// transformers' interpolate_pos_encoding, with its scale factor, is what
// transformers would run on it), layers.ResampleSize (newer transformers)
// or layers.ResampleTimm (timm's resample_abs_pos_embed). The report's
// Resampled says what was done.
func WithImageSize(size int, method layers.ResampleMethod) models.LoadOption {
	return LoadOptions{ImageSize: size, Resample: method}
}

// LoadOptions set how a checkpoint is read; a LoadOptions is itself a
// models.LoadOption, so Load(dir, LoadOptions{…}) still compiles.
//
// Deprecated: pass options instead: WithImageSize for ImageSize and
// Resample, and the model's options (WithPooling, layers.WithDtype) as
// they are.
type LoadOptions struct {
	// ImageSize and Resample are WithImageSize's.
	ImageSize int
	Resample  layers.ResampleMethod
	// Model are New's options (dtype, seed, pooling).
	Model []Option
}

// LoadOption implements models.LoadOption.
func (LoadOptions) LoadOption() {}

// loadSettings are what a Load function's options ask for.
type loadSettings struct {
	models.LoadSettings
	imageSize int
	resample  layers.ResampleMethod
	model     []Option // New's options, the store's included
}

// readLoadOptions sorts opts; labels says whether the loader builds a
// classification head (see models.LoadSettings.Check).
func readLoadOptions(where string, labels bool, opts []models.LoadOption) (loadSettings, error) {
	s := loadSettings{LoadSettings: models.ReadLoadOptions(opts)}
	family := s.Family
	s.Family = nil
	if err := s.Check("vit: "+where, labels); err != nil {
		return s, err
	}
	if len(s.Store) > 0 {
		s.model = append(s.model, StoreOption(s.Store...))
	}
	for _, o := range family {
		switch o := o.(type) {
		case Option:
			s.model = append(s.model, o)
		case LoadOptions:
			if o.ImageSize != 0 || o.Resample != "" {
				s.imageSize, s.resample = o.ImageSize, o.Resample
			}
			s.model = append(s.model, o.Model...)
		default:
			return s, fmt.Errorf("vit: %s: option %T is not one vit reads: leave it out", where, o)
		}
	}
	return s, nil
}

// readConfig reads a ViT config.json, or a ViTMAE one's encoder (see
// ViTMAEConfig.Encoder).
func readConfig(dir string) (Config, error) {
	var cfg Config
	var head struct {
		ModelType string `json:"model_type"`
	}
	if err := layers.ReadConfig(dir, &head); err == nil && head.ModelType == MAEModelType {
		m, err := readMAEConfig(dir)
		return m.Encoder(), err
	}
	if err := models.ReadConfig(dir, "vit", &cfg); err != nil {
		return cfg, fmt.Errorf("vit: %w", err)
	}
	return cfg, nil
}

// load reads dir into a model built by build from dir's config (at
// o.imageSize if set), fitting heads as k says.
func (o loadSettings) load(dir string, build func(Config) (*Model, *hfKeys, error)) (LoadReport, error) {
	cfg, err := readConfig(dir)
	if err != nil {
		return LoadReport{}, err
	}
	old := cfg
	if o.resample != "" {
		if err := o.resample.Validate(); err != nil {
			return LoadReport{}, fmt.Errorf("vit: %w", err)
		}
	}
	if o.imageSize != 0 {
		cfg.ImageSize = o.imageSize
	}
	m, k, err := build(cfg)
	if err != nil {
		return LoadReport{}, err
	}
	resample := cfg.ImageSize != old.ImageSize
	if resample {
		if old.PatchSize == 0 || old.ImageSize%old.PatchSize != 0 {
			return LoadReport{}, fmt.Errorf("vit: %s: image_size %d is not divisible by patch_size %d", dir, old.ImageSize, old.PatchSize)
		}
		k.positions = &capturedTensor{}
	}
	r, err := k.load(filepath.Join(dir, models.WeightsFile))
	if err != nil || !resample {
		return r, err
	}
	if k.positions.values == nil {
		return r, fmt.Errorf("vit: %s has no %s to resample", filepath.Join(dir, models.WeightsFile), k.positionKey())
	}
	method := o.resample
	if method == "" {
		method = layers.ResampleHF
	}
	g0, g1 := old.ImageSize/old.PatchSize, cfg.ImageSize/cfg.PatchSize
	want := []int{1, g0*g0 + cfg.prefixTokens(), cfg.HiddenSize}
	if !slices.Equal(k.positions.shape, want) {
		return r, fmt.Errorf("vit: %s: %s is %v, but image_size %d and patch_size %d make %v", dir, k.positionKey(), k.positions.shape, old.ImageSize, old.PatchSize, want)
	}
	v, err := layers.ResamplePositions(k.positions.values, g0, g0, cfg.HiddenSize, cfg.prefixTokens(), g1, g1, method)
	if err != nil {
		return r, fmt.Errorf("vit: %w", err)
	}
	setValues(m.PositionEmbeddings, v)
	r.Resampled = fmt.Sprintf("%s resampled from a %d×%d grid (image_size %d) to %d×%d (image_size %d) by %s",
		k.positionKey(), g0, g0, old.ImageSize, g1, g1, cfg.ImageSize, method)
	return r, nil
}

// The Load functions all have one shape, every family's (see
// models.LoadOption): LoadX(dir, opts...) (*X, LoadReport, error). Options
// are layers.Options for the store (dtype, seed), New's options
// (WithPooling, WithInterpolation), WithImageSize, models.Strict and, for
// the classifier, models.WithLabels. Without Strict a checkpoint of any
// head loads: the file's head tensors the model lacks are dropped and the
// model's head parameters the file lacks are created, both reported.

// Load reads the backbone of a ViT checkpoint directory, ours or Hugging
// Face's, of any head; head tensors are dropped and listed in the report.
func Load(dir string, opts ...models.LoadOption) (*Model, LoadReport, error) {
	o, err := readLoadOptions("Load", false, opts)
	if err != nil {
		return nil, LoadReport{}, err
	}
	var m *Model
	r, err := o.load(dir, func(c Config) (*Model, *hfKeys, error) {
		var err error
		c.ID2Label = nil
		if m, err = New(c, o.model...); err != nil {
			return nil, nil, err
		}
		k := keysOf(m)
		k.heads = !o.Strict
		return m, k, nil
	})
	if err != nil {
		return nil, LoadReport{}, err
	}
	return m, r, nil
}

// LoadForImageClassification reads a checkpoint of any head into an image
// classifier. Its labels are the checkpoint's (config.json's id2label), or
// models.WithLabels'. A checkpoint whose id2label names exactly these
// labels, in order, keeps its classifier; otherwise its classifier (and
// any other head, a ViTModel's pooler) is dropped and a new one created,
// as timm's reset_classifier: the report names both and sets NewHead. A
// DeiT checkpoint whose architectures name
// DeiTForImageClassificationWithTeacher gets those two heads (see
// NewForImageClassificationWithTeacher); any other DeiT gets the one
// classifier (DeiTForImageClassification). The
// pooling is the checkpoint's (config.json's zoo_pooling; absent: the
// class token) unless a WithPooling option sets one (to compute another
// model on the same weights, as the parity tests do; SavedPooling tells
// what it was).
func LoadForImageClassification(dir string, opts ...models.LoadOption) (*ForImageClassification, LoadReport, error) {
	return loadClassifier(dir, "LoadForImageClassification", false, opts)
}

// loadClassifier is LoadForImageClassification (DeiT's teacher heads when
// the checkpoint has them) and, with teacher, LoadForImageClassificationWithTeacher.
func loadClassifier(dir, where string, teacher bool, opts []models.LoadOption) (*ForImageClassification, LoadReport, error) {
	o, err := readLoadOptions(where, true, opts)
	if err != nil {
		return nil, LoadReport{}, err
	}
	var c *ForImageClassification
	var newHead bool
	r, err := o.load(dir, func(cfg Config) (*Model, *hfKeys, error) {
		saved, err := cfg.Labels()
		if err != nil && o.Labels == nil {
			return nil, nil, fmt.Errorf("vit: %s: %w", dir, err)
		}
		labels, isNew, err := o.HeadLabels(dir, saved, "an image classifier")
		if err != nil {
			return nil, nil, fmt.Errorf("vit: %w", err)
		}
		newHead = isNew
		if teacher && !cfg.isDeiT() {
			return nil, nil, fmt.Errorf("vit: %s: %s is a ViT checkpoint (model_type %s): the teacher heads need a DeiT (model_type %s), whose embeddings have a distillation token; start from a new DeiT instead (vit.AsDeiT)",
				where, dir, ModelType, DeiTModelType)
		}
		m, err := New(cfg, o.model...)
		if err != nil {
			return nil, nil, err
		}
		if teacher || cfg.isDeiT() && savedWithTeacher(dir) {
			c, err = NewForImageClassificationWithTeacher(m, labels)
		} else {
			c, err = NewForImageClassification(m, labels)
		}
		if err != nil {
			return nil, nil, err
		}
		k := keysOf(m)
		k.heads, k.newHead = !o.Strict, newHead
		return m, k, nil
	})
	if err != nil {
		return nil, LoadReport{}, err
	}
	r.NewHead = newHead
	return c, r, nil
}

// LoadClassifier reads an image classifier checkpoint (Save's, or
// transformers' ViTForImageClassification) with the labels of its
// config.json's id2label and the pooling it was saved with, strictly.
//
// Deprecated: use LoadForImageClassification(dir, models.Strict(), opts...).
func LoadClassifier(dir string, opts ...Option) (*ForImageClassification, error) {
	c, _, err := LoadForImageClassification(dir, loadOptions(opts, models.Strict())...)
	return c, err
}

// loadOptions is opts as load options, then more.
func loadOptions(opts []Option, more ...models.LoadOption) []models.LoadOption {
	out := make([]models.LoadOption, 0, len(opts)+len(more))
	for _, o := range opts {
		out = append(out, o)
	}
	return append(out, more...)
}

// SavedPooling is the pooling a checkpoint directory's config.json
// records (zoo_pooling), and whether it records one: without the key (a
// transformers file, or a zoo checkpoint from before the key) the pooling
// is PoolClass, transformers' own, and recorded is false.
func SavedPooling(dir string) (p Pooling, recorded bool, err error) {
	cfg, err := readConfig(dir)
	if err != nil {
		return "", false, err
	}
	return cmp.Or(cfg.Pooling, PoolClass), cfg.Pooling != "", nil
}

// setValues copies v into p, converting to its dtype; len(v) is p's size.
func setValues(p *layers.Param, v []float64) {
	switch d := p.Value.Data().(type) {
	case []float64:
		copy(d, v)
	case []float32:
		for i, x := range v {
			d[i] = float32(x)
		}
	}
}

// Package vit is the Vision Transformer (Dosovitskiy et al. 2021, "An
// Image is Worth 16x16 Words"): an image cut into P×P patches, each
// projected to a token, a learned class token and learned position
// embeddings, a pre-norm Transformer encoder from the zoo's shared layers
// and a classifier on the pooled output, with Hugging Face's parameter
// names and checkpoint layout (ViTModel, ViTForImageClassification).
package vit

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// ModelType is the model_type of a ViT config.json.
const ModelType = "vit"

// Config describes a ViT. Its JSON field names are those of Hugging Face's
// ViTConfig, so a ViT config.json decodes into it directly: see
// https://github.com/huggingface/transformers/blob/main/src/transformers/models/vit/configuration_vit.py
// and the PretrainedConfig it extends (configuration_utils.py).
//
// Every key of such a config.json is, when read (UnmarshalJSON), one of:
//
//   - computed: a field below;
//
//   - refused: a value that makes transformers compute something this model
//     does not is an error naming the key: qkv_bias false (Validate), an
//     image_size or patch_size that is a pair rather than one number, a
//     problem_type other than single_label_classification, a non-empty
//     pruned_heads;
//
//   - kept: every other key (pooler_output_size, pooler_act, torch_dtype,
//     transformers_version, …) goes to Extra, and Save writes it back. The
//     pooler keys, like encoder_stride, only shape heads this package does
//     not build (ViTModel's pooler, ViTForMaskedImageModeling's decoder).
//
//   - zoo's own: zoo_pooling, the pooling a classifier was trained with
//     (Pooling; absent: the class token). transformers ignores the key, so
//     a checkpoint that pools by the mean is not saved under a
//     transformers class name (see MarshalJSON).
//
// model_type must be "vit" or "deit" (ModelType); architectures and
// label2id are written from what Save saves, not kept.
type Config struct {
	// ModelType is the model type of the ViT family this config builds:
	// "" (or "vit") for ViT, DeiTModelType for DeiT (one more token, the
	// distillation token; see AsDeiT). It is config.json's model_type,
	// read and written by the model type's codec.
	ModelType                 string  `json:"-"`
	HiddenSize                int     `json:"hidden_size"`
	NumHiddenLayers           int     `json:"num_hidden_layers"`
	NumAttentionHeads         int     `json:"num_attention_heads"`
	IntermediateSize          int     `json:"intermediate_size"`
	HiddenAct                 string  `json:"hidden_act"`
	HiddenDropoutProb         float64 `json:"hidden_dropout_prob"`
	AttentionProbsDropoutProb float64 `json:"attention_probs_dropout_prob"`
	InitializerRange          float64 `json:"initializer_range"`
	LayerNormEps              float64 `json:"layer_norm_eps"`
	// ImageSize is the side of the square images the position embeddings
	// are learned for, in pixels.
	ImageSize int `json:"image_size"`
	// PatchSize is the side of a square patch, in pixels; it divides
	// ImageSize, so there are (ImageSize/PatchSize)² patches.
	PatchSize   int `json:"patch_size"`
	NumChannels int `json:"num_channels"`
	// QKVBias puts biases on the query, key and value projections; it must
	// be true (every published ViT has them).
	QKVBias bool `json:"qkv_bias"`
	// EncoderStride is inert here: only transformers'
	// ViTForMaskedImageModeling reads it (its decoder's pixel shuffle). It
	// is kept so that a config.json is written back as read; presets set
	// it to patch_size.
	EncoderStride int `json:"encoder_stride"`
	// ID2Label names the classes of an image classifier, by id ("0", "1", …).
	ID2Label map[string]string `json:"id2label,omitempty"`
	// Pooling is how the model pools its hidden states for a head (see
	// Pooling in model.go); "" (no key: a transformers file, or a zoo
	// checkpoint from before the key) and PoolClass are the class token,
	// which is what transformers computes. It is zoo's key
	// ("zoo_pooling"), which Model.Save always writes (cls too), so that a
	// checkpoint saved by zoo records its pooling.
	Pooling Pooling `json:"zoo_pooling,omitempty"`
	// Extra holds the config.json keys this Config does not model, as read
	// (see above); Save writes them back.
	Extra map[string]json.RawMessage `json:"-"`
}

// defaults are ViTConfig's defaults, which are google/vit-base-patch16-224's.
func defaults() Config {
	return Config{
		HiddenSize: 768, NumHiddenLayers: 12, NumAttentionHeads: 12, IntermediateSize: 3072,
		HiddenAct: "gelu", InitializerRange: 0.02, LayerNormEps: 1e-12,
		ImageSize: 224, PatchSize: 16, NumChannels: 3, QKVBias: true, EncoderStride: 16,
	}
}

// Base is ViT-B/16 at 224×224, google/vit-base-patch16-224
// (https://huggingface.co/google/vit-base-patch16-224/blob/main/config.json):
// 12 layers, 12 heads, 768 wide, 3072 inner, 196 patches of 16×16×3:
// 85,798,656 parameters in the backbone (ViTModel without its pooler), and
// 86,567,656 with that checkpoint's 1000-class head.
func Base() Config { return defaults() }

// sized is Base with L layers, width D, A heads and inner width I.
func sized(l, d, a, i int) Config {
	c := defaults()
	c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.IntermediateSize = l, d, a, i
	return c
}

// Small is ViT-S/16 at 224×224 (timm's vit_small_patch16_224, from
// Touvron et al. 2021, DeiT): 12 layers, 6 heads, 384 wide, 1536 inner:
// 21,665,664 parameters in the backbone.
func Small() Config { return sized(12, 384, 6, 1536) }

// Tiny is ViT-Ti/16 at 224×224 (timm's vit_tiny_patch16_224, DeiT-Ti):
// 12 layers, 3 heads, 192 wide, 768 inner: 5,524,416 parameters in the
// backbone.
func Tiny() Config { return sized(12, 192, 3, 768) }

// Fashion is a small ViT for 28×28 grayscale images (Fashion-MNIST, MNIST):
// 4×4 patches (a 7×7 grid, 50 tokens with the class token), 6 layers,
// 4 heads, 128 wide, 512 inner: 1,198,592 parameters in the backbone, and
// 1,199,882 with a 10-class head. Its size is chosen for an hour of
// training on two cores: about 63M multiply-adds per image forward, so a
// training step (forward, backward, AdamW) runs at about 85 images/s at
// batch 64 on the zoo's 2-core machine while it is shared with other runs
// (finetune's BenchmarkTrainStep), some 12 minutes per Fashion-MNIST
// epoch. Dropouts are 0, as ViTConfig's; regularise with augmentation or
// set them.
func Fashion() Config {
	c := sized(6, 128, 4, 512)
	c.ImageSize, c.PatchSize, c.NumChannels, c.EncoderStride = 28, 4, 1, 4
	return c
}

// NumPatches is the number of patches of an image, (image_size/patch_size)².
func (c Config) NumPatches() int {
	g := c.ImageSize / c.PatchSize
	return g * g
}

// Validate reports a configuration that cannot be built, or that is
// absurd: each size at most models.MaxDim (num_hidden_layers
// models.MaxLayers, the labels models.MaxLabels), image_size divisible by
// patch_size, hidden_size by num_attention_heads, and a parameter count
// that fits int. Whether the model fits the machine's memory is New's
// check (models.CheckParams).
func (c Config) Validate() error {
	if err := models.CheckSizes("vit config",
		models.Size{Field: "hidden_size", V: c.HiddenSize, Max: models.MaxDim},
		models.Size{Field: "num_hidden_layers", V: c.NumHiddenLayers, Max: models.MaxLayers},
		models.Size{Field: "num_attention_heads", V: c.NumAttentionHeads, Max: models.MaxDim},
		models.Size{Field: "intermediate_size", V: c.IntermediateSize, Max: models.MaxDim},
		models.Size{Field: "image_size", V: c.ImageSize, Max: models.MaxDim},
		models.Size{Field: "patch_size", V: c.PatchSize, Max: models.MaxDim},
		models.Size{Field: "num_channels", V: c.NumChannels, Max: models.MaxDim},
	); err != nil {
		return err
	}
	switch {
	case c.ImageSize < c.PatchSize:
		return fmt.Errorf("vit config: image_size %d is smaller than one patch (patch_size %d): use larger images or smaller patches", c.ImageSize, c.PatchSize)
	case c.ImageSize%c.PatchSize != 0:
		return fmt.Errorf("vit config: image_size %d is not divisible by patch_size %d: choose a patch size that divides the image side, or resize the images to a multiple of it", c.ImageSize, c.PatchSize)
	case c.HiddenSize%c.NumAttentionHeads != 0:
		return fmt.Errorf("vit config: hidden_size %d is not divisible by num_attention_heads %d", c.HiddenSize, c.NumAttentionHeads)
	case int64(c.ImageSize/c.PatchSize)*int64(c.ImageSize/c.PatchSize) >= models.MaxDim:
		return fmt.Errorf("vit config: image_size %d / patch_size %d makes more than %d patches; use larger patches", c.ImageSize, c.PatchSize, models.MaxDim)
	case len(c.ID2Label) > models.MaxLabels:
		return fmt.Errorf("vit config: id2label has %d labels, more than %d", len(c.ID2Label), models.MaxLabels)
	case !(c.LayerNormEps > 0):
		return fmt.Errorf("vit config: layer_norm_eps %g must be positive", c.LayerNormEps)
	case !(c.InitializerRange >= 0) || math.IsInf(c.InitializerRange, 1):
		return fmt.Errorf("vit config: initializer_range %g must be finite and not negative", c.InitializerRange)
	case c.EncoderStride < 0:
		return fmt.Errorf("vit config: encoder_stride %d must not be negative", c.EncoderStride)
	case c.Pooling != "" && c.Pooling != PoolClass && c.Pooling != PoolMean:
		return fmt.Errorf("vit config: zoo_pooling %q must be %q or %q", c.Pooling, PoolClass, PoolMean)
	case !c.QKVBias:
		return fmt.Errorf("vit config: qkv_bias false is not supported: zoo's ViT has biases on the query, key and value projections; use a checkpoint with qkv_bias true")
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"hidden_dropout_prob", c.HiddenDropoutProb}, {"attention_probs_dropout_prob", c.AttentionProbsDropoutProb}} {
		if !(p.v >= 0 && p.v < 1) {
			return fmt.Errorf("vit config: %s %g must be in [0, 1)", p.name, p.v)
		}
	}
	if _, err := layers.ParseActivation(c.HiddenAct); err != nil {
		return fmt.Errorf("vit config: hidden_act: %w", err)
	}
	if n := c.NumParams(); n == math.MaxInt64 || n > math.MaxInt {
		big := c.paramTerms()[0]
		for _, t := range c.paramTerms() {
			if t.N > big.N {
				big = t
			}
		}
		return fmt.Errorf("vit config: the parameter count overflows int: %s; lower %s", big.What, big.Lower)
	}
	if err := c.validateDeiT(); err != nil {
		return err
	}
	return c.checkExtra()
}

// NumParams is the number of learnable scalars New allocates for c (the
// backbone, ViTModel without its pooler), computed without allocating
// (math.MaxInt64 if it overflows): the patch projection D·C·P² + D, the
// class token D, the position embeddings (N+1)·D; per layer
// 4D² + 2D·I + 9D + I (query, key, value and attention output D² + D
// each, intermediate D·I + I, output I·D + D, two LayerNorms 2D each);
// the final LayerNorm 2D. A classifier adds (D + 1)·num_labels.
func (c Config) NumParams() int64 {
	var n int64
	for _, t := range c.paramTerms() {
		n = models.Sum(n, t.N)
	}
	return n
}

func (c Config) paramTerms() []models.Term {
	d, l, in := int64(c.HiddenSize), int64(c.NumHiddenLayers), int64(c.IntermediateSize)
	ch, p := int64(c.NumChannels), int64(c.PatchSize)
	var n int64
	if c.PatchSize > 0 {
		g := int64(c.ImageSize / c.PatchSize)
		n = models.Mul(g, g)
	}
	perLayer := models.Sum(models.Mul(4, d, d), models.Mul(2, d, in), models.Mul(9, d), in)
	tokens := int64(c.prefixTokens()) // the class token, and DeiT's distillation token
	return []models.Term{
		{What: fmt.Sprintf("the patch projection, hidden_size %d × num_channels %d × patch_size² %d", d, ch, p*p), Lower: "hidden_size or patch_size",
			N: models.Sum(models.Mul(d, ch, p, p), d)},
		{What: fmt.Sprintf("position_embeddings, %s patches + 1 × hidden_size %d", models.Count(n), d), Lower: "image_size (or raise patch_size)",
			N: models.Mul(models.Sum(n, tokens), d)},
		{What: fmt.Sprintf("the layers, num_hidden_layers %d × %s per layer (hidden_size %d, intermediate_size %d)", l, models.Count(perLayer), d, in),
			Lower: "num_hidden_layers, hidden_size or intermediate_size", N: models.Mul(l, perLayer)},
		{What: "the class token and the final LayerNorm", Lower: "hidden_size", N: models.Mul(2+tokens, d)},
	}
}

// refused are the config.json keys whose values, other than their
// defaults, make transformers' ViT compute what this model does not.
var refused = []models.Refusal{
	{Key: "image_size", OK: func(v any) bool { _, ok := v.(float64); return ok },
		Why: "is not supported: zoo's ViT reads square images; image_size must be one number"},
	{Key: "patch_size", OK: func(v any) bool { _, ok := v.(float64); return ok },
		Why: "is not supported: zoo's ViT cuts square patches; patch_size must be one number"},
	{Key: "pruned_heads", OK: func(v any) bool { m, ok := v.(map[string]any); return v == nil || ok && len(m) == 0 },
		Why: "is not supported: zoo's ViT has num_attention_heads heads in every layer; use an unpruned checkpoint"},
	{Key: "problem_type", OK: func(v any) bool { return v == nil || v == "single_label_classification" },
		Why: "is not supported: zoo's ViT classifier trains with softmax cross-entropy (single_label_classification)"},
}

// codec reads and writes ViT's config.json (see Config).
var codec = models.NewCodec(models.Descriptor[Config]{
	Family: "vit config", ModelType: ModelType, Defaults: defaults, Refused: refused,
})

// checkExtra rejects Extra keys that Config models and refused values.
func (c Config) checkExtra() error { return c.codecOf().CheckExtra(c) }

// The architectures Save writes: transformers' class for the layout, or,
// for a classifier that pools by the mean of the patches, which no
// transformers class computes (ViTForImageClassification always reads the
// class token), zoo's own name, so that the file claims no class that
// computes something else.
const (
	archModel          = "ViTModel"
	archClassifier     = "ViTForImageClassification"
	archMeanClassifier = "ZooViTForImageClassificationMeanPooling"
)

// MeanPoolingNote says what a mean-pooling classifier checkpoint means to
// Hugging Face transformers, for zoo inspect and messages.
const MeanPoolingNote = "pools by the mean of the patches (zoo_pooling mean): Hugging Face's ViTForImageClassification cannot represent it " +
	"(it always classifies by the class token and ignores zoo_pooling), so architectures names zoo's " + archMeanClassifier +
	"; transformers would load the weights but compute another model"

// classifierArch is the architectures entry of a classifier pooled by p.
func classifierArch(p Pooling) string {
	if p == PoolMean {
		return archMeanClassifier
	}
	return archClassifier
}

// MarshalJSON writes a Hugging Face ViT config.json: the fields,
// model_type, architectures (ViTForImageClassification with id2label,
// zoo's ZooViTForImageClassificationMeanPooling if it also pools by the
// mean, else ViTModel) and label2id, then the Extra keys in name order.
func (c Config) MarshalJSON() ([]byte, error) {
	if c.isDeiT() {
		return c.codecOf().Marshal(c, c.deitArch(len(c.ID2Label) > 0, false))
	}
	arch := archModel
	if len(c.ID2Label) > 0 {
		arch = classifierArch(c.Pooling)
	}
	return codec.Marshal(c, arch)
}

// UnmarshalJSON reads a config.json as the Config doc describes. Fields it
// leaves out keep their values when c is already set, as encoding/json
// does, and otherwise take ViTConfig's defaults.
func (c *Config) UnmarshalJSON(b []byte) error { return unmarshalConfig(b, c) }

// Labels are the class names of id2label by id (models.Labels).
func (c Config) Labels() ([]string, error) { return models.Labels(c.ID2Label, "vit config") }

package vit

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/d73a19ff/zoo/models"
)

// MAEModelType is the model_type of a ViTMAE config.json.
const MAEModelType = "vit_mae"

// archMAE is transformers' class for the pretraining model.
const archMAE = "ViTMAEForPreTraining"

// ViTMAEConfig describes a masked autoencoder (He et al. 2022, "Masked
// Autoencoders Are Scalable Vision Learners"). Its JSON names are those of
// Hugging Face's ViTMAEConfig
// (transformers/models/vit_mae/configuration_vit_mae.py): the encoder's are
// ViTConfig's, the decoder has its own width, depth, heads and inner width
// (its activation, dropouts, LayerNorm epsilon and initialisation are the
// encoder's, as ViTMAEDecoder's deepcopy of the config makes them).
//
// As for Config, a config.json key is computed (a field), refused (qkv_bias
// false, an image_size or patch_size pair, pruned_heads: an error naming
// the key) or kept in Extra and written back.
type ViTMAEConfig struct {
	HiddenSize                int     `json:"hidden_size"`
	NumHiddenLayers           int     `json:"num_hidden_layers"`
	NumAttentionHeads         int     `json:"num_attention_heads"`
	IntermediateSize          int     `json:"intermediate_size"`
	HiddenAct                 string  `json:"hidden_act"`
	HiddenDropoutProb         float64 `json:"hidden_dropout_prob"`
	AttentionProbsDropoutProb float64 `json:"attention_probs_dropout_prob"`
	InitializerRange          float64 `json:"initializer_range"`
	LayerNormEps              float64 `json:"layer_norm_eps"`
	ImageSize                 int     `json:"image_size"`
	PatchSize                 int     `json:"patch_size"`
	NumChannels               int     `json:"num_channels"`
	QKVBias                   bool    `json:"qkv_bias"`
	// The decoder: its heads, width, depth and inner width.
	DecoderNumAttentionHeads int `json:"decoder_num_attention_heads"`
	DecoderHiddenSize        int `json:"decoder_hidden_size"`
	DecoderNumHiddenLayers   int `json:"decoder_num_hidden_layers"`
	DecoderIntermediateSize  int `json:"decoder_intermediate_size"`
	// MaskRatio is the fraction of patches hidden from the encoder (0.75):
	// the encoder sees int(N·(1−mask_ratio)) patches, as random_masking's
	// len_keep.
	MaskRatio float64 `json:"mask_ratio"`
	// NormPixLoss normalises each target patch by its own mean and
	// (unbiased) variance before the MSE (forward_loss).
	NormPixLoss bool `json:"norm_pix_loss"`
	// Extra holds the config.json keys not modelled, written back by Save.
	Extra map[string]json.RawMessage `json:"-"`
}

// maeDefaults are ViTMAEConfig's defaults, facebook/vit-mae-base's.
func maeDefaults() ViTMAEConfig {
	return ViTMAEConfig{
		HiddenSize: 768, NumHiddenLayers: 12, NumAttentionHeads: 12, IntermediateSize: 3072,
		HiddenAct: "gelu", InitializerRange: 0.02, LayerNormEps: 1e-12,
		ImageSize: 224, PatchSize: 16, NumChannels: 3, QKVBias: true,
		DecoderNumAttentionHeads: 16, DecoderHiddenSize: 512, DecoderNumHiddenLayers: 8, DecoderIntermediateSize: 2048,
		MaskRatio: 0.75,
	}
}

// withEncoder is MAE with the encoder sizes of e and the decoder d wide, l
// deep, with h heads and inner width i.
func withEncoder(e Config, d, l, h, i int) ViTMAEConfig {
	c := maeDefaults()
	c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize = e.HiddenSize, e.NumHiddenLayers, e.NumAttentionHeads, e.IntermediateSize
	c.ImageSize, c.PatchSize, c.NumChannels, c.LayerNormEps = e.ImageSize, e.PatchSize, e.NumChannels, e.LayerNormEps
	c.DecoderHiddenSize, c.DecoderNumHiddenLayers, c.DecoderNumAttentionHeads, c.DecoderIntermediateSize = d, l, h, i
	return c
}

// MAEBase is facebook/vit-mae-base
// (https://huggingface.co/facebook/vit-mae-base/blob/main/config.json):
// a ViT-B/16 encoder at 224×224 and a decoder 512 wide, 8 layers, 16
// heads, 2048 inner: 111,655,680 learnable parameters (85,647,360 in the
// encoder, 26,008,320 in the decoder), plus the two fixed position tables
// (197×768 and 197×512, 252,160 values), 111,907,840 tensors' values in
// all, as transformers' num_parameters() counts them.
func MAEBase() ViTMAEConfig { return maeDefaults() }

// MAESmall is a ViT-S/16 encoder (Small) with a decoder 256 wide, 4
// layers, 8 heads, 1024 inner (a zoo choice: MAE's decoder is about a
// third of the encoder's width).
func MAESmall() ViTMAEConfig { return withEncoder(Small(), 256, 4, 8, 1024) }

// MAETiny is a ViT-Ti/16 encoder (Tiny) with a decoder 128 wide, 4
// layers, 4 heads, 512 inner (a zoo choice).
func MAETiny() ViTMAEConfig { return withEncoder(Tiny(), 128, 4, 4, 512) }

// MAEFashion is MAE for 28×28 grayscale images: the encoder is Fashion's
// (6 layers, 128 wide, 4 heads, 4×4 patches, so 49 patches of which 12 are
// seen at mask_ratio 0.75), so that its checkpoint's encoder loads into a
// Fashion classifier (LoadForImageClassification); the decoder is light,
// 64 wide, 2 layers, 4 heads, 256 inner (it reads all 50 tokens, the
// encoder 13). 1,198,592 learnable parameters in the encoder minus its
// fixed position table (6,400), 109,456 in the decoder.
func MAEFashion() ViTMAEConfig { return withEncoder(Fashion(), 64, 2, 4, 256) }

// Encoder is the ViT configuration of the encoder: the classifier an MAE
// checkpoint fine-tunes into.
func (c ViTMAEConfig) Encoder() Config {
	e := defaults()
	e.HiddenSize, e.NumHiddenLayers, e.NumAttentionHeads, e.IntermediateSize = c.HiddenSize, c.NumHiddenLayers, c.NumAttentionHeads, c.IntermediateSize
	e.HiddenAct, e.HiddenDropoutProb, e.AttentionProbsDropoutProb = c.HiddenAct, c.HiddenDropoutProb, c.AttentionProbsDropoutProb
	e.InitializerRange, e.LayerNormEps = c.InitializerRange, c.LayerNormEps
	e.ImageSize, e.PatchSize, e.NumChannels, e.QKVBias, e.EncoderStride = c.ImageSize, c.PatchSize, c.NumChannels, c.QKVBias, c.PatchSize
	return e
}

// decoder is the decoder's configuration as a ViT Config (the blocks'
// sizes), as ViTMAEDecoder's decoder_config.
func (c ViTMAEConfig) decoder() Config {
	d := c.Encoder()
	d.HiddenSize, d.NumHiddenLayers, d.NumAttentionHeads, d.IntermediateSize = c.DecoderHiddenSize, c.DecoderNumHiddenLayers, c.DecoderNumAttentionHeads, c.DecoderIntermediateSize
	return d
}

// NumPatches is (image_size/patch_size)².
func (c ViTMAEConfig) NumPatches() int { return c.Encoder().NumPatches() }

// PatchValues is the number of values of one patch, patch_size²·num_channels:
// the width of the decoder's prediction.
func (c ViTMAEConfig) PatchValues() int { return c.PatchSize * c.PatchSize * c.NumChannels }

// LenKeep is the number of patches the encoder sees, int(N·(1−mask_ratio)),
// as random_masking computes len_keep.
func (c ViTMAEConfig) LenKeep() int {
	return int(float64(c.NumPatches()) * (1 - c.MaskRatio))
}

// Validate reports a configuration that cannot be built: the encoder's
// checks (Config.Validate), the decoder's sizes, hidden_size and
// decoder_hidden_size divisible by 4 (the 2-D sine-cosine tables split
// each in two halves of sines and cosines), mask_ratio in [0, 1) leaving at
// least one patch seen and one masked.
func (c ViTMAEConfig) Validate() error {
	if err := c.Encoder().Validate(); err != nil {
		return fmt.Errorf("vit_mae: %w", err)
	}
	if err := models.CheckSizes("vit_mae config",
		models.Size{Field: "decoder_hidden_size", V: c.DecoderHiddenSize, Max: models.MaxDim},
		models.Size{Field: "decoder_num_hidden_layers", V: c.DecoderNumHiddenLayers, Max: models.MaxLayers},
		models.Size{Field: "decoder_num_attention_heads", V: c.DecoderNumAttentionHeads, Max: models.MaxDim},
		models.Size{Field: "decoder_intermediate_size", V: c.DecoderIntermediateSize, Max: models.MaxDim},
	); err != nil {
		return err
	}
	n := c.NumPatches()
	switch {
	case c.DecoderHiddenSize%c.DecoderNumAttentionHeads != 0:
		return fmt.Errorf("vit_mae config: decoder_hidden_size %d is not divisible by decoder_num_attention_heads %d", c.DecoderHiddenSize, c.DecoderNumAttentionHeads)
	case c.HiddenSize%4 != 0 || c.DecoderHiddenSize%4 != 0:
		return fmt.Errorf("vit_mae config: hidden_size %d and decoder_hidden_size %d must be multiples of 4 for the 2-D sine-cosine position tables (get_2d_sincos_pos_embed)", c.HiddenSize, c.DecoderHiddenSize)
	case !(c.MaskRatio >= 0 && c.MaskRatio < 1):
		return fmt.Errorf("vit_mae config: mask_ratio %g must be in [0, 1)", c.MaskRatio)
	case c.LenKeep() < 1:
		return fmt.Errorf("vit_mae config: mask_ratio %g leaves no patch of %d visible: lower it", c.MaskRatio, n)
	case c.NormPixLoss && c.PatchValues() < 2:
		return fmt.Errorf("vit_mae config: norm_pix_loss needs patches of 2 or more values (patch_size² × num_channels is %d): the variance of one value is undefined", c.PatchValues())
	case c.LenKeep() >= n:
		return fmt.Errorf("vit_mae config: mask_ratio %g masks no patch of %d, so there is nothing to reconstruct: raise it", c.MaskRatio, n)
	}
	if n := c.NumParams(); n == math.MaxInt64 || n > math.MaxInt {
		return fmt.Errorf("vit_mae config: the parameter count overflows int: lower the sizes")
	}
	return maeCodec.CheckExtra(c)
}

// NumParams is the number of learnable scalars NewViTMAEForPreTraining
// allocates (the fixed position tables are buffers, not counted): the
// encoder's (Config.NumParams less its (N+1)·D position embeddings), the
// decoder_embed D·Dd + Dd, the mask token Dd, per decoder layer
// 4Dd² + 2Dd·Id + 9Dd + Id, decoder_norm 2Dd and decoder_pred
// Dd·P²C + P²C.
func (c ViTMAEConfig) NumParams() int64 {
	var n int64
	for _, t := range c.paramTerms() {
		n = models.Sum(n, t.N)
	}
	return n
}

func (c ViTMAEConfig) paramTerms() []models.Term {
	e := c.Encoder()
	terms := e.paramTerms()
	terms[1].N = 0 // the position embeddings are a fixed buffer
	d, dd, l, in := int64(c.HiddenSize), int64(c.DecoderHiddenSize), int64(c.DecoderNumHiddenLayers), int64(c.DecoderIntermediateSize)
	pv := int64(c.PatchValues())
	perLayer := models.Sum(models.Mul(4, dd, dd), models.Mul(2, dd, in), models.Mul(9, dd), in)
	return append(terms,
		models.Term{What: fmt.Sprintf("the decoder layers, decoder_num_hidden_layers %d × %s per layer", l, models.Count(perLayer)),
			Lower: "decoder_num_hidden_layers, decoder_hidden_size or decoder_intermediate_size", N: models.Mul(l, perLayer)},
		models.Term{What: "decoder_embed, mask_token, decoder_norm and decoder_pred", Lower: "decoder_hidden_size or patch_size",
			N: models.Sum(models.Mul(d, dd), dd, dd, models.Mul(2, dd), models.Mul(dd, pv), pv)},
	)
}

// maeCodec reads and writes ViTMAE's config.json (see ViTMAEConfig).
var maeCodec = models.NewCodec(models.Descriptor[ViTMAEConfig]{
	Family: "vit_mae config", ModelType: MAEModelType, Defaults: maeDefaults, Refused: refused,
})

// MarshalJSON writes a Hugging Face ViTMAE config.json: the fields,
// model_type "vit_mae", architectures [ViTMAEForPreTraining], then the
// Extra keys in name order.
func (c ViTMAEConfig) MarshalJSON() ([]byte, error) { return maeCodec.Marshal(c, archMAE) }

// UnmarshalJSON reads a ViTMAE config.json: absent keys keep their values
// when c is already set (as encoding/json does: a pipeline's model section
// edits its preset) and otherwise take ViTMAEConfig's defaults; model_type,
// when present, must be "vit_mae".
func (c *ViTMAEConfig) UnmarshalJSON(b []byte) error { return maeCodec.Unmarshal(b, c) }

package vit

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"strings"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// Pooling is how the backbone reduces its hidden states (B, N+1, D) to one
// vector per image (B, D).
type Pooling string

// The poolings.
const (
	// PoolClass takes the class token's final state: Hugging Face's
	// ViTForImageClassification (sequence_output[:, 0, :]) and timm's
	// global_pool="token". The default.
	PoolClass Pooling = "cls"
	// PoolMean averages the N patch tokens' final states (after the final
	// LayerNorm, vit.layernorm), leaving out the class token. timm's
	// global_pool="avg" averages too, but by default normalises after
	// pooling (fc_norm) instead of before; BEiT's and Data2Vec's
	// use_mean_pooling in transformers do the same. Here the one final
	// LayerNorm stays where ViTForImageClassification has it, so a
	// Hugging Face checkpoint loads unchanged under either pooling.
	PoolMean Pooling = "mean"
)

// Model is ViT's backbone, transformers' ViTModel without its pooler
// (add_pooling_layer=False, as ViTForImageClassification builds it): the
// patch projection, the class token put first, learned position
// embeddings added, dropout; a stack of pre-norm encoder blocks; a final
// LayerNorm. Parameter names are Hugging Face's keys under "vit."
// (vit.embeddings.patch_embeddings.projection.weight,
// vit.encoder.layer.0.attention.attention.query.weight, vit.layernorm.weight,
// …), so a checkpoint loads key by key (hf.go).
//
// A Model, and a ForImageClassification on it, is safe for concurrent use
// by multiple goroutines for inference: Probabilities, AttentionRollout,
// HiddenStates, Attentions and graphs of a caller's own (Features,
// FeaturesOutputs, Pooled, Logits) only read the parameters, and runs of
// the model's graphs take turns (they share the store's memory; see
// layers.Machine). What writes the parameters or Pooling (LoadWeights,
// training, putting a head on it) must not overlap with them.
//
// Pooling is saved with the checkpoint in zoo's own config.json key
// (Config.Pooling, "zoo_pooling") and restored at load. Hugging Face's
// ViTConfig has no key for it and transformers always pools by the class
// token, ignoring zoo_pooling; so a classifier that pools by the mean is
// saved under zoo's architectures name, not ViTForImageClassification
// (see MeanPoolingNote).
//
// Images of another height and width than image_size are read with the
// position embeddings interpolated to their grid, as transformers'
// interpolate_pos_encoding=True, when Interpolate is set (WithInterpolation).
type Model struct {
	Config          Config
	Store           *layers.Store
	PatchEmbeddings *layers.PatchEmbedding // vit.embeddings.patch_embeddings.projection
	ClassToken      *layers.ClassToken     // vit.embeddings.cls_token (1, 1, D)
	// DistillationToken is DeiT's deit.embeddings.distillation_token
	// (1, 1, D), put after the class token; nil for ViT.
	DistillationToken  *layers.Param
	PositionEmbeddings *layers.Param // vit.embeddings.position_embeddings (1, N+1, D); DeiT's (1, N+2, D)
	// Encoder is the stack vit.encoder.layer.*, with vit.layernorm as its
	// final LayerNorm.
	Encoder *layers.Encoder
	// Pooling is how Pool reduces the hidden states; "" is PoolClass.
	// Save records it (Config.Pooling).
	Pooling Pooling
	// Interpolate, when set, lets the model read images of any height and
	// width that are multiples of patch_size: the position embeddings are
	// resampled to the image's patch grid by this method in the graph
	// (differentiably), as transformers' ViTEmbeddings.
	// interpolate_pos_encoding does on every forward pass; "" refuses
	// other sizes than image_size × image_size, as transformers does by
	// default. See WithInterpolation.
	Interpolate layers.ResampleMethod
	drop        layers.Dropout
}

// blockNames are Hugging Face ViT's names for the parts of a layer, and
// for the stack relative to the "vit" scope: its layers are
// "encoder.layer.i" and its final norm is "layernorm" (vit.layernorm sits
// beside vit.encoder, not in it).
var blockNames = layers.BlockNames{
	SelfAttn: "attention", SelfAttnNorm: "layernorm_before",
	FFNIn: "intermediate.dense", FFNOut: "output.dense", FinalNorm: "layernorm_after",
	Attention: layers.AttentionNames{Query: "attention.query", Key: "attention.key", Value: "attention.value", Out: "output.dense"},
	Layers:    "encoder.layer", StackNorm: "layernorm",
}

func (c Config) block() layers.BlockConfig {
	return layers.BlockConfig{
		Dim: c.HiddenSize, Heads: c.NumAttentionHeads, FFNDim: c.IntermediateSize, Activation: c.HiddenAct,
		Norm: layers.PreNorm, LayerNormEps: c.LayerNormEps, Dropout: c.HiddenDropoutProb,
		AttentionDropout: c.AttentionProbsDropoutProb, Bias: true, Names: blockNames,
	}
}

// Option sets a runtime knob of New: the store's (layers.WithDtype,
// layers.WithSeed) through StoreOption, or the model's own (WithPooling).
type Option func(*options)

// LoadOption makes an Option a models.LoadOption: the Load functions pass
// it to New.
func (Option) LoadOption() {}

type options struct {
	store       []layers.Option
	pooling     Pooling
	interpolate layers.ResampleMethod
}

// StoreOption passes a layers.Option (dtype, seed) to the model's store.
func StoreOption(o ...layers.Option) Option {
	return func(p *options) { p.store = append(p.store, o...) }
}

// WithPooling sets how the backbone pools. Without it the pooling is the
// config's (Config.Pooling, restored from a checkpoint), else PoolClass.
func WithPooling(p Pooling) Option { return func(o *options) { o.pooling = p } }

// WithInterpolation lets the model read images of any height × width (each
// a multiple of patch_size) by resampling its position embeddings to their
// patch grid with method (Model.Interpolate):
//
//   - layers.ResampleSize is transformers' current
//     ViTEmbeddings.interpolate_pos_encoding (every release since mid-2024,
//     5.x included): F.interpolate(size=(H/P, W/P), mode="bicubic",
//     align_corners=False);
//   - layers.ResampleHF is transformers 4.18's (DINO's):
//     F.interpolate(scale_factor=((H/P + 0.1)/√N, (W/P + 0.1)/√N)), which
//     samples a very slightly stretched grid;
//   - layers.ResampleTimm is timm's resample_abs_pos_embed (antialiased).
//
// Like both transformers forms, a square image of image_size uses the
// position embeddings as they are.
func WithInterpolation(method layers.ResampleMethod) Option {
	return func(o *options) { o.interpolate = method }
}

func collect(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// New builds the backbone with Hugging Face's initialisation
// (ViTPreTrainedModel._init_weights in modeling_vit.py): Linear and Conv2d
// weights trunc_normal_(std=initializer_range), biases zero, LayerNorms 1
// and 0, and cls_token and position_embeddings
// trunc_normal_(std=initializer_range). torch's trunc_normal_ cuts at the
// absolute values ±2 (a=-2, b=2), not at ±2 std, so with the usual std 0.02
// it never cuts; truncNormal does the same.
func New(cfg Config, opts ...Option) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := collect(opts)
	if o.pooling == "" {
		o.pooling = cmp.Or(cfg.Pooling, PoolClass)
	}
	if o.pooling != PoolClass && o.pooling != PoolMean {
		return nil, fmt.Errorf("vit: pooling %q must be %q or %q", o.pooling, PoolClass, PoolMean)
	}
	if cfg.isDeiT() && o.pooling == PoolMean {
		return nil, fmt.Errorf("deit: pooling mean is not supported for DeiT: its heads read the class token (and the distillation token); leave the pooling out")
	}
	if o.interpolate != "" {
		if err := o.interpolate.Validate(); err != nil {
			return nil, fmt.Errorf("vit: interpolation: %w", err)
		}
	}
	// Config.Pooling is "" for the class token, as a config.json without
	// the key reads, so that a model's Config equals its preset's; Save
	// records m.Pooling, cls too.
	cfg.Pooling = o.pooling
	if o.pooling == PoolClass {
		cfg.Pooling = ""
	}
	s, err := layers.NewStore(append([]layers.Option{layers.WithInitStd(cfg.InitializerRange)}, o.store...)...)
	if err != nil {
		return nil, fmt.Errorf("vit: %w", err)
	}
	if err := models.CheckParams("vit", cfg.paramTerms(), int64(s.Dtype().Size())); err != nil {
		return nil, err
	}
	m := &Model{Config: cfg, Store: s, Pooling: o.pooling, Interpolate: o.interpolate, drop: layers.Dropout{P: cfg.HiddenDropoutProb}}
	root := s.Root().Sub(cfg.scope())
	emb := root.Sub("embeddings")
	d := cfg.HiddenSize
	if m.ClassToken, err = layers.NewClassToken(emb, d); err != nil {
		return nil, fmt.Errorf("vit: %w", err)
	}
	if cfg.isDeiT() {
		if m.DistillationToken, err = emb.Param("distillation_token", []int{1, 1, d}, layers.Constant(0)); err != nil {
			return nil, fmt.Errorf("deit: %w", err)
		}
	}
	if m.PositionEmbeddings, err = emb.Param("position_embeddings", []int{1, cfg.NumPatches() + cfg.prefixTokens(), d}, layers.Constant(0)); err != nil {
		return nil, fmt.Errorf("vit: %w", err)
	}
	if m.PatchEmbeddings, err = layers.NewPatchEmbedding(emb.Sub("patch_embeddings").Sub("projection"), cfg.NumChannels, cfg.PatchSize, d); err != nil {
		return nil, fmt.Errorf("vit: %w", err)
	}
	if m.Encoder, err = layers.NewEncoder(root, cfg.block(), cfg.NumHiddenLayers); err != nil {
		return nil, fmt.Errorf("vit: %w", err)
	}
	m.init()
	return m, nil
}

// init redraws every matrix (Linear and Conv2d weights, of 2 or more
// dims), the class token and the position embeddings from
// trunc_normal_(0, initializer_range, -2, 2), as _init_weights does; the
// store already made biases 0 and LayerNorms 1 and 0.
func (m *Model) init() {
	tn := truncNormal(m.Config.InitializerRange, -2, 2)
	for _, p := range m.Store.Params() {
		switch {
		case p.Value.Dims() >= 2:
			m.Store.Reinit(p, tn)
		case strings.HasSuffix(p.Name, ".bias"):
			m.Store.Reinit(p, layers.Constant(0)) // already 0 unless initializer_range is 0
		}
	}
}

// truncNormal draws N(0, std²) conditioned on [a, b] by rejection, as
// torch.nn.init.trunc_normal_ (which uses the inverse CDF; the
// distribution is the same). With std 0 it is all zeros.
func truncNormal(std, a, b float64) layers.Init {
	return func(rng *rand.Rand, _ []int, v []float64) {
		for i := range v {
			if std == 0 {
				v[i] = 0
				continue
			}
			for {
				x := rng.NormFloat64() * std
				if x >= a && x <= b {
					v[i] = x
					break
				}
			}
		}
	}
}

// Features maps images (B, C, H, W) to the final hidden states (B, N+1, D)
// (the class token first, then the patches in row-major order),
// transformers' last_hidden_state and timm's forward_features. H = W =
// image_size, N = (image_size/P)²; with Interpolate set, H and W are any
// multiples of the patch size P and N = (H/P)·(W/P). An image of another
// size or channel count is an error saying what to do.
func (m *Model) Features(g *layers.Graph, pixels *gorgonia.Node) (*gorgonia.Node, error) {
	h, err := m.embed(g, pixels)
	if err != nil {
		return nil, err
	}
	if h, err = m.Encoder.Forward(g, h, nil); err != nil {
		return nil, fmt.Errorf("vit: %w", err)
	}
	return h, nil
}

// Hidden is Features, under the name the other families use.
func (m *Model) Hidden(g *layers.Graph, pixels *gorgonia.Node) (*gorgonia.Node, error) {
	return m.Features(g, pixels)
}

// FeaturesWithProbs is Features that also returns each layer's attention
// probabilities, (B·h, N+1, N+1) laid out as (B, h, N+1, N+1), for
// attention rollout.
func (m *Model) FeaturesWithProbs(g *layers.Graph, pixels *gorgonia.Node) (*gorgonia.Node, []*gorgonia.Node, error) {
	h, err := m.embed(g, pixels)
	if err != nil {
		return nil, nil, err
	}
	h, probs, err := m.Encoder.ForwardWithProbs(g, h, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("vit: %w", err)
	}
	return h, probs, nil
}

// CheckPixels reports images that are not (B, num_channels, image_size,
// image_size), or, with Interpolate set, not (B, num_channels, H, W) with
// H and W positive multiples of patch_size, saying what to do.
func (m *Model) CheckPixels(pixels *gorgonia.Node) error {
	c := m.Config
	if pixels == nil || pixels.Dims() != 4 {
		var s any = "nil"
		if pixels != nil {
			s = pixels.Shape()
		}
		return fmt.Errorf("vit: images %v must be (B, C, H, W) = (B, %d, %d, %d)", s, c.NumChannels, c.ImageSize, c.ImageSize)
	}
	sh := pixels.Shape()
	return m.CheckSize(sh[1], sh[2], sh[3])
}

// CheckSize reports images of ch channels and h × w pixels that the model
// cannot read (see CheckPixels).
func (m *Model) CheckSize(ch, h, w int) error {
	c := m.Config
	switch {
	case ch != c.NumChannels:
		return fmt.Errorf("vit: images have %d channels but the model reads %d (num_channels): convert them (grayscale to RGB or back) first", ch, c.NumChannels)
	case h == c.ImageSize && w == c.ImageSize:
		return nil
	case m.Interpolate == "":
		return fmt.Errorf("vit: images are %d×%d but the model's image_size is %d: resize them to %d×%d, interpolate the position embeddings to their grid (WithInterpolation, as transformers' interpolate_pos_encoding=True), or load the checkpoint at the new size with its position embeddings resampled (WithImageSize)",
			h, w, c.ImageSize, c.ImageSize, c.ImageSize)
	case h < c.PatchSize || w < c.PatchSize || h%c.PatchSize != 0 || w%c.PatchSize != 0:
		return fmt.Errorf("vit: images of %d×%d are not a grid of whole %d×%d patches: resize or crop them to multiples of patch_size %d", h, w, c.PatchSize, c.PatchSize, c.PatchSize)
	case int64(h/c.PatchSize)*int64(w/c.PatchSize) >= models.MaxDim:
		return fmt.Errorf("vit: images of %d×%d make more than %d patches of %d×%d: use smaller images", h, w, models.MaxDim, c.PatchSize, c.PatchSize)
	}
	return nil
}

// PositionWeights is the matrix (1 + gh·gw, 1 + g0²) that maps the
// position embeddings (1 + g0², D), g0 = image_size/patch_size, to those
// of a gh × gw patch grid by method (DeiT: 2 + …, its class and
// distillation tokens' rows kept): the class token's row is kept and
// each grid position is a bicubic mix of the learned ones. Resampling is
// linear in the embeddings, so row j of the matrix is the resampling of
// the unit vectors (layers.ResamplePositions of an identity). For the
// model's own grid it is the identity, as in transformers.
func (c Config) PositionWeights(gh, gw int, method layers.ResampleMethod) ([]float64, error) {
	g0 := c.ImageSize / c.PatchSize
	n0 := g0 * g0
	eye := make([]float64, n0*n0)
	for i := range n0 {
		eye[i*n0+i] = 1
	}
	// (g0², n0) "embeddings", one channel per learned position: the output
	// (gh·gw, n0) holds, at (j, i), the weight of position i in new
	// position j.
	r, err := layers.ResamplePositions(eye, g0, g0, n0, 0, gh, gw, method)
	if err != nil {
		return nil, fmt.Errorf("vit: position interpolation: %w", err)
	}
	t := c.prefixTokens()
	w := make([]float64, (t+gh*gw)*(t+n0))
	for i := range t {
		w[i*(t+n0)+i] = 1
	}
	for j := range gh * gw {
		copy(w[(t+j)*(t+n0)+t:(t+j+1)*(t+n0)], r[j*n0:(j+1)*n0])
	}
	return w, nil
}

// embed maps images (B, C, H, W) to the encoder's input (B, N+1, D):
// [cls; patches] + positions (interpolated to the patch grid when the
// images are not image_size square), with dropout (ViTEmbeddings.forward).
func (m *Model) embed(g *layers.Graph, pixels *gorgonia.Node) (*gorgonia.Node, error) {
	if err := m.CheckPixels(pixels); err != nil {
		return nil, err
	}
	h, err := m.PatchEmbeddings.Forward(g, pixels)
	if err != nil {
		return nil, fmt.Errorf("vit: %w", err)
	}
	if m.DistillationToken != nil { // DeiT: [cls; dist; patches]
		if h, err = ops.PrependToken(h, g.Node(m.DistillationToken)); err != nil {
			return nil, fmt.Errorf("deit: %s: %w", m.DistillationToken.Name, err)
		}
	}
	if h, err = m.ClassToken.Forward(g, h); err != nil {
		return nil, fmt.Errorf("vit: %w", err)
	}
	// (1, N+1, D) → (N+1, D), broadcast over the batch.
	pos, err := gorgonia.Reshape(g.Node(m.PositionEmbeddings), m.PositionEmbeddings.Value.Shape()[1:].Clone())
	if err != nil {
		return nil, fmt.Errorf("vit: %s: %w", m.PositionEmbeddings.Name, err)
	}
	c := m.Config
	if ph, pw := pixels.Shape()[2], pixels.Shape()[3]; ph != c.ImageSize || pw != c.ImageSize {
		// interpolate_pos_encoding: (1 + gh·gw, 1 + N) × (1 + N, D).
		gh, gw := ph/c.PatchSize, pw/c.PatchSize
		wv, err := c.PositionWeights(gh, gw, m.Interpolate)
		if err != nil {
			return nil, err
		}
		t := c.prefixTokens()
		wn, err := g.Constant("vit.position_interpolation", wv, t+gh*gw, t+c.NumPatches())
		if err != nil {
			return nil, fmt.Errorf("vit: %w", err)
		}
		if pos, err = gorgonia.Mul(wn, pos); err != nil {
			return nil, fmt.Errorf("vit: %s: interpolation: %w", m.PositionEmbeddings.Name, err)
		}
	}
	if h, err = ops.AddBroadcast(h, pos); err != nil {
		return nil, fmt.Errorf("vit: %s: %w", m.PositionEmbeddings.Name, err)
	}
	return m.drop.Forward(g, h)
}

// Pool maps hidden states h (B, N+1, D) to one vector per image (B, D):
// the class token's state (PoolClass), or the mean of the N patch states
// (PoolMean), timm's forward_head before its classifier.
func (m *Model) Pool(g *layers.Graph, h *gorgonia.Node) (*gorgonia.Node, error) {
	if h == nil || h.Dims() != 3 {
		return nil, fmt.Errorf("vit: pool: hidden states must be (B, N+1, D)")
	}
	b, t, d := h.Shape()[0], h.Shape()[1], h.Shape()[2]
	if m.Pooling == PoolMean {
		if t < 2 {
			return nil, fmt.Errorf("vit: pool: mean pooling needs patch tokens, got %d tokens", t)
		}
		// A (B, 1, N+1) row of weights, 0 for the class token and 1/N for
		// each patch, times h: (B, 1, D).
		w := make([]float64, b*t)
		for i := 0; i < b; i++ {
			for j := 1; j < t; j++ {
				w[i*t+j] = 1 / float64(t-1)
			}
		}
		wn, err := g.Constant("vit.mean_pool_weights", w, b, 1, t)
		if err != nil {
			return nil, fmt.Errorf("vit: pool: %w", err)
		}
		y, err := ops.BatchedMatMul(wn, h, false, false)
		if err != nil {
			return nil, fmt.Errorf("vit: pool: %w", err)
		}
		if y, err = gorgonia.Reshape(y, []int{b, d}); err != nil {
			return nil, fmt.Errorf("vit: pool: %w", err)
		}
		return y, nil
	}
	first, err := g.IntConstant("vit.cls_index", make([]int, b), b)
	if err != nil {
		return nil, fmt.Errorf("vit: pool: %w", err)
	}
	y, err := layers.SelectTokens(h, first)
	if err != nil {
		return nil, fmt.Errorf("vit: pool: %w", err)
	}
	return y, nil
}

// Pooled maps images (B, C, H, W) to pooled vectors (B, D) (see Pool).
// With class-token pooling the last block runs for the class token alone
// (layers.Encoder.ForwardFirst): the same vectors and gradients, without
// the last block's query, output projection and feed-forward for the
// patches nobody reads.
func (m *Model) Pooled(g *layers.Graph, pixels *gorgonia.Node) (*gorgonia.Node, error) {
	if m.Pooling == PoolMean {
		h, err := m.Features(g, pixels)
		if err != nil {
			return nil, err
		}
		return m.Pool(g, h)
	}
	h, err := m.embed(g, pixels)
	if err != nil {
		return nil, err
	}
	if h, err = m.Encoder.ForwardFirst(g, h, nil); err != nil {
		return nil, fmt.Errorf("vit: %w", err)
	}
	return gorgonia.Reshape(h, []int{h.Shape()[0], h.Shape()[2]})
}

// NumParams is the number of learnable scalars, heads included.
func (m *Model) NumParams() int { return m.Store.NumParams() }

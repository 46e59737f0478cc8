package vit

import (
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
// by multiple goroutines for inference: Probabilities, AttentionRollout and
// graphs of a caller's own (Features, Pooled, Logits) only read the
// parameters, and runs of the model's graphs take turns (they share the
// store's memory; see layers.Machine). What writes the parameters or
// Pooling (LoadWeights, training, putting a head on it) must not overlap
// with them.
//
// Pooling is a runtime choice, not an architecture field: Hugging Face's
// ViTConfig has no key for it and transformers always pools by the class
// token, so a config.json key for mean pooling would be silently ignored
// by transformers, which would then compute another model. It is not
// saved: a model trained with PoolMean must be given PoolMean again when
// loaded (see WithPooling).
type Model struct {
	Config             Config
	Store              *layers.Store
	PatchEmbeddings    *layers.PatchEmbedding // vit.embeddings.patch_embeddings.projection
	ClassToken         *layers.ClassToken     // vit.embeddings.cls_token (1, 1, D)
	PositionEmbeddings *layers.Param          // vit.embeddings.position_embeddings (1, N+1, D)
	// Encoder is the stack vit.encoder.layer.*, with vit.layernorm as its
	// final LayerNorm.
	Encoder *layers.Encoder
	// Pooling is how Pool reduces the hidden states; "" is PoolClass.
	Pooling Pooling
	drop    layers.Dropout
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

type options struct {
	store   []layers.Option
	pooling Pooling
}

// StoreOption passes a layers.Option (dtype, seed) to the model's store.
func StoreOption(o ...layers.Option) Option {
	return func(p *options) { p.store = append(p.store, o...) }
}

// WithPooling sets how the backbone pools (default PoolClass).
func WithPooling(p Pooling) Option { return func(o *options) { o.pooling = p } }

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
		o.pooling = PoolClass
	}
	if o.pooling != PoolClass && o.pooling != PoolMean {
		return nil, fmt.Errorf("vit: pooling %q must be %q or %q", o.pooling, PoolClass, PoolMean)
	}
	s, err := layers.NewStore(append([]layers.Option{layers.WithInitStd(cfg.InitializerRange)}, o.store...)...)
	if err != nil {
		return nil, fmt.Errorf("vit: %w", err)
	}
	if err := models.CheckParams("vit", cfg.paramTerms(), int64(s.Dtype().Size())); err != nil {
		return nil, err
	}
	m := &Model{Config: cfg, Store: s, Pooling: o.pooling, drop: layers.Dropout{P: cfg.HiddenDropoutProb}}
	root := s.Root().Sub("vit")
	emb := root.Sub("embeddings")
	d := cfg.HiddenSize
	if m.ClassToken, err = layers.NewClassToken(emb, d); err != nil {
		return nil, fmt.Errorf("vit: %w", err)
	}
	if m.PositionEmbeddings, err = emb.Param("position_embeddings", []int{1, cfg.NumPatches() + 1, d}, layers.Constant(0)); err != nil {
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

// Features maps images (B, C, H, W), H = W = image_size, to the final
// hidden states (B, N+1, D) (the class token first, then the patches in
// row-major order), transformers' last_hidden_state and timm's
// forward_features. An image of another size or channel count is an
// error: resize it, or load the checkpoint at the new size (LoadOptions).
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
// image_size), saying what to do.
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
	switch {
	case sh[1] != c.NumChannels:
		return fmt.Errorf("vit: images have %d channels but the model reads %d (num_channels): convert them (grayscale to RGB or back) first", sh[1], c.NumChannels)
	case sh[2] != c.ImageSize || sh[3] != c.ImageSize:
		return fmt.Errorf("vit: images are %d×%d but the model's image_size is %d: resize them to %d×%d, or load the checkpoint at the new size with its position embeddings resampled (LoadOptions.ImageSize)",
			sh[2], sh[3], c.ImageSize, c.ImageSize, c.ImageSize)
	}
	return nil
}

// embed maps images (B, C, S, S) to the encoder's input (B, N+1, D):
// [cls; patches] + positions, with dropout (ViTEmbeddings.forward).
func (m *Model) embed(g *layers.Graph, pixels *gorgonia.Node) (*gorgonia.Node, error) {
	if err := m.CheckPixels(pixels); err != nil {
		return nil, err
	}
	h, err := m.PatchEmbeddings.Forward(g, pixels)
	if err != nil {
		return nil, fmt.Errorf("vit: %w", err)
	}
	if h, err = m.ClassToken.Forward(g, h); err != nil {
		return nil, fmt.Errorf("vit: %w", err)
	}
	// (1, N+1, D) → (N+1, D), broadcast over the batch.
	pos, err := gorgonia.Reshape(g.Node(m.PositionEmbeddings), m.PositionEmbeddings.Value.Shape()[1:].Clone())
	if err != nil {
		return nil, fmt.Errorf("vit: %s: %w", m.PositionEmbeddings.Name, err)
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

// Pooled maps images (B, C, S, S) to pooled vectors (B, D) (see Pool).
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

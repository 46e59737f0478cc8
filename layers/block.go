package layers

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
)

// Norm is where a block's norms (LayerNorms by default) sit.
type Norm string

// The norm placements. Post-norm (the original Transformer, BERT) computes
// LN(x + f(x)); pre-norm (GPT-2, ViT) computes x + f(LN(x)) and needs a
// final LayerNorm after the stack. LN is a LayerNorm unless
// BlockConfig.NewNorm builds another Normalizer.
const (
	PostNorm Norm = "post"
	PreNorm  Norm = "pre"
)

// BlockNames are the scopes of a block's parts relative to the block; they
// may contain dots. The zero value means Hugging Face BART's names.
type BlockNames struct {
	SelfAttn, SelfAttnNorm   string
	CrossAttn, CrossAttnNorm string // decoder blocks only
	FFNIn, FFNOut, FinalNorm string
	Attention                AttentionNames
	Layers, StackNorm        string // a stack's list of blocks and its final norm (pre-norm)
}

func (n BlockNames) orDefault() BlockNames {
	if n == (BlockNames{}) {
		return BlockNames{
			SelfAttn: "self_attn", SelfAttnNorm: "self_attn_layer_norm",
			CrossAttn: "encoder_attn", CrossAttnNorm: "encoder_attn_layer_norm",
			FFNIn: "fc1", FFNOut: "fc2", FinalNorm: "final_layer_norm",
			Layers: "layers", StackNorm: "layer_norm",
		}
	}
	return n
}

// BlockConfig describes an encoder or decoder block.
type BlockConfig struct {
	Dim, Heads, FFNDim int
	Activation         string  // see ParseActivation
	Norm               Norm    // PreNorm or PostNorm
	LayerNormEps       float64 // e.g. 1e-5; the default norm's (see NewNorm)
	Dropout            float64 // on each sublayer's output before the residual add
	AttentionDropout   float64 // on attention probabilities
	ActivationDropout  float64 // inside the feed-forward
	Bias               bool    // biases on all projections (see AttentionNoBias)
	Names              BlockNames
	// Causal makes an encoder block's self-attention causal: a decoder-only
	// (GPT) block is a causal encoder block.
	Causal bool
	// FusedQKV projects self-attention queries, keys and values with one
	// matrix (GPT-2's c_attn).
	FusedQKV bool
	// NewNorm builds each of the block's norms, and a pre-norm stack's final
	// norm, over x (..., dim) in scope s, the norm's own scope (e.g.
	// "self_attn_layer_norm"). nil builds a LayerNorm with LayerNormEps and
	// a bias, so its parameters are s's "weight" and "bias" (dim) as before.
	NewNorm func(s Scope, dim int) (Normalizer, error) `json:"-"`
	// NewMLP builds the block's feed-forward, x (..., Dim) to (..., Dim), in
	// the block's scope s from the FeedForwardConfig the default would get
	// (Dim, Hidden = FFNDim, Activation, Dropout = ActivationDropout, Bias,
	// In and Out = Names.FFNIn and FFNOut). nil builds a FeedForward.
	NewMLP func(s Scope, c FeedForwardConfig) (MLP, error) `json:"-"`
	// KVHeads and HeadDim shape every attention (see AttentionConfig): 0
	// means Heads key-value heads of width Dim/Heads, today's shapes.
	KVHeads, HeadDim int
	// AttentionNoBias drops, when Bias is on, the biases of the attention
	// projections it marks (see AttentionConfig.NoBias).
	AttentionNoBias AttentionBiases
	// Positions, if not nil, encodes positions into the self-attention's
	// query and key heads (see PositionEncoder); cross-attention takes none.
	Positions PositionEncoder `json:"-"`
}

// newMLP builds the block's feed-forward in scope s: NewMLP's, or a
// FeedForward, which it also returns (nil for NewMLP's).
func (c BlockConfig) newMLP(s Scope, n BlockNames) (MLP, *FeedForward, error) {
	fc := FeedForwardConfig{Dim: c.Dim, Hidden: c.FFNDim, Activation: c.Activation,
		Dropout: c.ActivationDropout, Bias: c.Bias, In: n.FFNIn, Out: n.FFNOut}
	if c.NewMLP == nil {
		f, err := NewFeedForward(s, fc)
		if err != nil {
			return nil, nil, err
		}
		return f, f, nil
	}
	m, err := c.NewMLP(s, fc)
	if err != nil {
		return nil, nil, err
	}
	if m == nil {
		return nil, nil, fmt.Errorf("block %s: NewMLP returned no feed-forward", s.prefix)
	}
	return m, nil, nil
}

// newNorm builds a norm over Dim in scope s with NewNorm, or a LayerNorm.
func (c BlockConfig) newNorm(s Scope) (Normalizer, error) {
	if c.NewNorm == nil {
		return NewLayerNorm(s, c.Dim, c.LayerNormEps, true)
	}
	n, err := c.NewNorm(s, c.Dim)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, fmt.Errorf("block %s: NewNorm returned no norm", s.prefix)
	}
	return n, nil
}

// Validate reports a configuration that cannot be built.
func (c BlockConfig) Validate() error {
	if c.Norm != PreNorm && c.Norm != PostNorm {
		return fmt.Errorf("block: norm placement %q must be %q or %q", c.Norm, PreNorm, PostNorm)
	}
	if c.FFNDim <= 0 {
		return fmt.Errorf("block: feed-forward width %d must be positive", c.FFNDim)
	}
	if c.NewNorm == nil && !(c.LayerNormEps > 0) {
		return fmt.Errorf("block: layer norm eps %g must be positive", c.LayerNormEps)
	}
	if _, err := ParseActivation(c.Activation); err != nil {
		return fmt.Errorf("block: %w", err)
	}
	for _, p := range []float64{c.Dropout, c.AttentionDropout, c.ActivationDropout} {
		if !(p >= 0 && p < 1) {
			return fmt.Errorf("block: dropout %g must be in [0, 1)", p)
		}
	}
	return c.attention(false).Validate()
}

// attention is the config of the block's self-attention, or with cross of
// its cross-attention.
func (c BlockConfig) attention(cross bool) AttentionConfig {
	a := AttentionConfig{Dim: c.Dim, Heads: c.Heads, Bias: c.Bias, Dropout: c.AttentionDropout, Names: c.Names.orDefault().Attention,
		FusedQKV: c.FusedQKV, KVHeads: c.KVHeads, HeadDim: c.HeadDim, NoBias: c.AttentionNoBias}
	if !cross {
		a.Positions = c.Positions
	}
	return a
}

// sublayer is one residual branch: an attention or feed-forward with its
// norm (a LayerNorm unless BlockConfig.NewNorm says otherwise) and output
// dropout.
type sublayer struct {
	norm    Normalizer
	where   string // the norm's name, for errors
	prenorm bool
	dropout Dropout
}

// apply returns LN(x + drop(f(x))) for post-norm and x + drop(f(LN(x))) for
// pre-norm: the residual always carries x itself, never LN(x).
func (s sublayer) apply(g *Graph, x *gorgonia.Node, f func(*gorgonia.Node) (*gorgonia.Node, error)) (*gorgonia.Node, error) {
	return s.applyPicked(g, x, nil, f)
}

// applyPicked is apply for some rows of x only: f gets all of x (after the
// pre-norm) and returns the output of the rows pick keeps, and the
// residual is pick(x). A nil pick keeps every row.
func (s sublayer) applyPicked(g *Graph, x *gorgonia.Node, pick, f func(*gorgonia.Node) (*gorgonia.Node, error)) (*gorgonia.Node, error) {
	in := x
	var err error
	if s.prenorm {
		if in, err = s.norm.Forward(g, x); err != nil {
			return nil, err
		}
	}
	y, err := f(in)
	if err != nil {
		return nil, err
	}
	if y, err = s.dropout.Forward(g, y); err != nil {
		return nil, err
	}
	r := x
	if pick != nil {
		if r, err = pick(x); err != nil {
			return nil, err
		}
	}
	if y, err = ops.Add(r, y); err != nil {
		return nil, fmt.Errorf("%s: residual: %w", s.where, err)
	}
	if s.prenorm {
		return y, nil
	}
	return s.norm.Forward(g, y)
}

func newSublayer(s Scope, c BlockConfig, normName string) (sublayer, error) {
	ns := s.Sub(normName)
	n, err := c.newNorm(ns)
	if err != nil {
		return sublayer{}, err
	}
	where := ns.prefix
	if ln, ok := n.(*LayerNorm); ok {
		where = ln.Weight.Name
	}
	return sublayer{norm: n, where: where, prenorm: c.Norm == PreNorm, dropout: Dropout{P: c.Dropout}}, nil
}

// EncoderBlock is self-attention then a feed-forward, each a residual
// sublayer with its norm.
type EncoderBlock struct {
	SelfAttn *MultiHeadAttention
	MLP      MLP          // the feed-forward (see BlockConfig.NewMLP)
	FFN      *FeedForward // MLP when it is the default FeedForward, else nil
	attn     sublayer
	ffn      sublayer
	causal   bool
}

// NewEncoderBlock creates an encoder block in scope s.
func NewEncoderBlock(s Scope, c BlockConfig) (*EncoderBlock, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", s.prefix, err)
	}
	n := c.Names.orDefault()
	b := &EncoderBlock{causal: c.Causal}
	var err error
	if b.SelfAttn, b.attn, err = newAttention(s, c, n.SelfAttn, n.SelfAttnNorm, false); err != nil {
		return nil, err
	}
	if b.MLP, b.FFN, b.ffn, err = newFFN(s, c, n); err != nil {
		return nil, err
	}
	return b, nil
}

// newAttention makes an attention in scope name with its residual sublayer,
// a cross-attention with cross.
func newAttention(s Scope, c BlockConfig, name, norm string, cross bool) (*MultiHeadAttention, sublayer, error) {
	a, err := NewMultiHeadAttention(s.Sub(name), c.attention(cross))
	if err != nil {
		return nil, sublayer{}, err
	}
	sub, err := newSublayer(s, c, norm)
	return a, sub, err
}

// newFFN makes the block's feed-forward with its residual sublayer; f is
// the feed-forward when it is the default FeedForward.
func newFFN(s Scope, c BlockConfig, n BlockNames) (m MLP, f *FeedForward, sub sublayer, err error) {
	if m, f, err = c.newMLP(s, n); err != nil {
		return nil, nil, sublayer{}, err
	}
	sub, err = newSublayer(s, c, n.FinalNorm)
	return m, f, sub, err
}

// Forward maps x (B, T, D), with an optional key-padding mask (B, T), to
// (B, T, D).
func (b *EncoderBlock) Forward(g *Graph, x, mask *gorgonia.Node) (*gorgonia.Node, error) {
	return b.forward(g, x, func(in *gorgonia.Node) (*gorgonia.Node, error) {
		return b.SelfAttn.Forward(g, in, nil, mask, b.causal)
	})
}

// ForwardAt is Forward with the positions (B, T) of x's tokens, an int
// node, given to the self-attention's position encoder (see
// MultiHeadAttention.ForwardAt); nil positions are Forward's 0…T−1.
func (b *EncoderBlock) ForwardAt(g *Graph, x, mask, positions *gorgonia.Node) (*gorgonia.Node, error) {
	return b.forward(g, x, func(in *gorgonia.Node) (*gorgonia.Node, error) {
		return b.SelfAttn.ForwardAt(g, in, mask, positions, b.causal)
	})
}

// ForwardWithProbs is Forward that also returns the self-attention
// probabilities, (B·h, T, T) laid out as (B, h, T, T), before dropout (see
// MultiHeadAttention.ForwardWithProbs).
func (b *EncoderBlock) ForwardWithProbs(g *Graph, x, mask *gorgonia.Node) (out, probs *gorgonia.Node, err error) {
	out, err = b.forward(g, x, func(in *gorgonia.Node) (*gorgonia.Node, error) {
		y, p, err := b.SelfAttn.ForwardWithProbs(g, in, nil, mask, b.causal)
		probs = p
		return y, err
	})
	return out, probs, err
}

// ForwardCached is Forward of a causal block through a KV cache (see
// MultiHeadAttention.ForwardCached): x (B, T, D) are the tokens at the
// cache's slot, mask (B, C) marks the occupied cache slots.
func (b *EncoderBlock) ForwardCached(g *Graph, x, mask *gorgonia.Node, c *KVCache) (*gorgonia.Node, error) {
	if !b.causal {
		return nil, fmt.Errorf("%s: a KV cache needs a causal block", b.SelfAttn.name())
	}
	return b.forward(g, x, func(in *gorgonia.Node) (*gorgonia.Node, error) {
		return b.SelfAttn.ForwardCached(g, in, mask, c)
	})
}

// ForwardFirst is Forward at the first position only: x (B, T, D) to
// (B, 1, D), the first position attending to all of x (see
// Encoder.ForwardFirst). A causal block is refused: its first position
// sees only itself, which Forward on x[:, :1] computes.
func (b *EncoderBlock) ForwardFirst(g *Graph, x, mask *gorgonia.Node) (*gorgonia.Node, error) {
	if b.causal {
		return nil, fmt.Errorf("%s: ForwardFirst is for a bidirectional block", b.SelfAttn.name())
	}
	if x == nil || x.Dims() != 3 {
		return nil, fmt.Errorf("%s: ForwardFirst: x must be (B, T, D)", b.SelfAttn.name())
	}
	batch, d := x.Shape()[0], x.Shape()[2]
	zeros, err := g.IntConstant("first_position", make([]int, batch), batch)
	if err != nil {
		return nil, err
	}
	first := func(n *gorgonia.Node) (*gorgonia.Node, error) { // (B, T, D) → (B, 1, D)
		y, err := ops.SelectTokens(n, zeros)
		if err != nil {
			return nil, fmt.Errorf("%s: first position: %w", b.SelfAttn.name(), err)
		}
		return gorgonia.Reshape(y, []int{batch, 1, d})
	}
	h, err := b.attn.applyPicked(g, x, first, func(in *gorgonia.Node) (*gorgonia.Node, error) {
		q, err := first(in)
		if err != nil {
			return nil, err
		}
		return b.SelfAttn.Forward(g, q, in, mask, false)
	})
	if err != nil {
		return nil, err
	}
	return b.ffn.apply(g, h, func(in *gorgonia.Node) (*gorgonia.Node, error) { return b.MLP.Forward(g, in) })
}

func (b *EncoderBlock) forward(g *Graph, x *gorgonia.Node, attend func(*gorgonia.Node) (*gorgonia.Node, error)) (*gorgonia.Node, error) {
	h, err := b.attn.apply(g, x, attend)
	if err != nil {
		return nil, err
	}
	return b.ffn.apply(g, h, func(in *gorgonia.Node) (*gorgonia.Node, error) { return b.MLP.Forward(g, in) })
}

// DecoderBlock is causal self-attention, cross-attention to an encoder's
// output, then a feed-forward, each a residual sublayer.
type DecoderBlock struct {
	SelfAttn, CrossAttn *MultiHeadAttention
	MLP                 MLP          // the feed-forward (see BlockConfig.NewMLP)
	FFN                 *FeedForward // MLP when it is the default FeedForward, else nil
	self, cross, ffn    sublayer
}

// NewDecoderBlock creates a decoder block in scope s.
func NewDecoderBlock(s Scope, c BlockConfig) (*DecoderBlock, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", s.prefix, err)
	}
	n := c.Names.orDefault()
	b := &DecoderBlock{}
	var err error
	if b.SelfAttn, b.self, err = newAttention(s, c, n.SelfAttn, n.SelfAttnNorm, false); err != nil {
		return nil, err
	}
	if b.CrossAttn, b.cross, err = newAttention(s, c, n.CrossAttn, n.CrossAttnNorm, true); err != nil {
		return nil, err
	}
	if b.MLP, b.FFN, b.ffn, err = newFFN(s, c, n); err != nil {
		return nil, err
	}
	return b, nil
}

// Forward maps decoder states x (B, T, D) to (B, T, D), attending causally
// to x (with optional key-padding mask (B, T)) and to the encoder output
// memory (B, Tm, D) (with optional memMask (B, Tm)).
func (b *DecoderBlock) Forward(g *Graph, x, mask, memory, memMask *gorgonia.Node) (*gorgonia.Node, error) {
	out, _, err := b.forwardWith(g, x, mask, memory, memMask, false)
	return out, err
}

// ForwardWithProbs is Forward that also returns the cross-attention
// probabilities (B·h, T, Tm).
func (b *DecoderBlock) ForwardWithProbs(g *Graph, x, mask, memory, memMask *gorgonia.Node) (out, probs *gorgonia.Node, err error) {
	return b.forwardWith(g, x, mask, memory, memMask, true)
}

// forwardWith is ForwardWithProbs; without withProbs the cross-attention
// may run fused and probs may be nil.
func (b *DecoderBlock) forwardWith(g *Graph, x, mask, memory, memMask *gorgonia.Node, withProbs bool) (out, probs *gorgonia.Node, err error) {
	if memory == nil {
		return nil, nil, fmt.Errorf("%s: a decoder block needs the encoder output", b.CrossAttn.name())
	}
	self := func(in *gorgonia.Node) (*gorgonia.Node, error) { return b.SelfAttn.Forward(g, in, nil, mask, true) }
	cross := func(in *gorgonia.Node) (*gorgonia.Node, *gorgonia.Node, error) {
		return b.CrossAttn.forward(g, in, memory, memMask, false, withProbs)
	}
	return b.forward(g, x, self, cross)
}

// forward runs the three residual sublayers with the given self- and
// cross-attention, returning the output and the cross-attention
// probabilities.
func (b *DecoderBlock) forward(g *Graph, x *gorgonia.Node, self func(*gorgonia.Node) (*gorgonia.Node, error),
	cross func(*gorgonia.Node) (*gorgonia.Node, *gorgonia.Node, error)) (out, probs *gorgonia.Node, err error) {
	h, err := b.self.apply(g, x, self)
	if err != nil {
		return nil, nil, err
	}
	if h, err = b.cross.apply(g, h, func(in *gorgonia.Node) (*gorgonia.Node, error) {
		y, p, err := cross(in)
		probs = p
		return y, err
	}); err != nil {
		return nil, nil, err
	}
	out, err = b.ffn.apply(g, h, func(in *gorgonia.Node) (*gorgonia.Node, error) { return b.MLP.Forward(g, in) })
	return out, probs, err
}

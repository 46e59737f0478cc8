package seq2seq

import (
	"fmt"
	"math"
	"strings"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// Model is the encoder-decoder Transformer, computed as Hugging Face's
// MarianMTModel computes it. Parameter names are Marian's
// (model.shared.weight or model.{encoder,decoder}.embed_tokens.weight,
// model.encoder.layers.N.self_attn.q_proj.weight, …,
// model.decoder.layers.N.encoder_attn.*, lm_head.weight); sinusoidal
// positions are not parameters, and final_logits_bias is a buffer.
//
// A Model is safe for concurrent use by multiple goroutines for inference:
// Greedy, BeamSearch, Translate, CrossAttention and graphs of a caller's
// own (Forward, Encode, Loss) only read the parameters, and runs of the
// model's graphs take turns (they share the store's memory; see
// layers.Machine). What writes the parameters (LoadWeights, training)
// must not overlap with them.
type Model struct {
	Config   Config
	Store    *layers.Store
	SrcEmbed *layers.Embedding // model.shared or model.encoder.embed_tokens
	TgtEmbed *layers.Embedding // the same table as SrcEmbed when shared
	Pos      *layers.Sinusoidal
	Encoder  *layers.Encoder
	Decoder  *layers.Decoder
	LMHead   *layers.Linear // lm_head; nil when tied to TgtEmbed
	// FinalLogitsBias (1, V_tgt) is added to the logits. It is a buffer,
	// as in transformers, which does not train it: zero in a new model,
	// loaded from a checkpoint, and never changed by an optimizer.
	FinalLogitsBias *layers.Param
	drop            layers.Dropout
	graphs          graphs // decoding graphs kept between calls (see ReleaseGraphs)
}

// New builds a model with fairseq's initialisation of the Transformer:
// Xavier-uniform weights, zero biases, and N(0, 1/d_model) embeddings, so
// that embeddings scaled by √d_model have unit variance (transformers
// instead draws N(0, init_std²); init_std is kept in Config.Extra but not
// used). Options set the dtype and seed.
func New(cfg Config, opts ...layers.Option) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s, err := layers.NewStore(opts...)
	if err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	if err := models.CheckParams("seq2seq", cfg.paramTerms(true), int64(s.Dtype().Size())); err != nil {
		return nil, err
	}
	m := &Model{Config: cfg, Store: s, drop: layers.Dropout{P: cfg.Dropout}}
	root := s.Root().Sub("model")
	if cfg.ShareEmbeddings {
		if m.SrcEmbed, err = layers.NewEmbedding(root.Sub("shared"), cfg.SrcVocabSize, cfg.DModel); err != nil {
			return nil, fmt.Errorf("seq2seq: %w", err)
		}
		m.TgtEmbed = m.SrcEmbed
	} else {
		if m.SrcEmbed, err = layers.NewEmbedding(root.Sub("encoder").Sub("embed_tokens"), cfg.SrcVocabSize, cfg.DModel); err != nil {
			return nil, fmt.Errorf("seq2seq: %w", err)
		}
		if m.TgtEmbed, err = layers.NewEmbedding(root.Sub("decoder").Sub("embed_tokens"), cfg.TgtVocabSize, cfg.DModel); err != nil {
			return nil, fmt.Errorf("seq2seq: %w", err)
		}
	}
	if m.Pos, err = layers.NewSinusoidalLayout(cfg.DModel, positionsBase, cfg.layout()); err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	if m.Encoder, err = layers.NewEncoder(root.Sub("encoder"), cfg.block(), cfg.NumEncoderLayers); err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	if m.Decoder, err = layers.NewDecoder(root.Sub("decoder"), cfg.block(), cfg.NumDecoderLayers); err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	if !cfg.TieOutput {
		if m.LMHead, err = layers.NewLinear(s.Root().Sub("lm_head"), cfg.DModel, cfg.TgtVocabSize, false); err != nil {
			return nil, fmt.Errorf("seq2seq: %w", err)
		}
	}
	if m.FinalLogitsBias, err = s.Root().Buffer(biasKey, []int{1, cfg.TgtVocabSize}, layers.Constant(0)); err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	m.initialise()
	return m, nil
}

// initialise applies fairseq's transformer initialisation
// (fairseq/models/transformer: Embedding and Linear with xavier_uniform_).
func (m *Model) initialise() {
	for _, p := range m.Store.Params() {
		shape := p.Value.Shape()
		switch {
		case p == m.SrcEmbed.Weight || p == m.TgtEmbed.Weight:
			m.Store.Reinit(p, layers.Normal(1/math.Sqrt(float64(m.Config.DModel))))
		case len(shape) == 2:
			m.Store.Reinit(p, layers.Uniform(math.Sqrt(6/float64(shape[0]+shape[1]))))
		case isBias(p.Name) && !isNorm(p.Name):
			m.Store.Reinit(p, layers.Constant(0))
		}
	}
}

// Inputs are a batch's graph inputs. Src (B, Ts) and TgtIn (B, Tt) are token
// ids; the masks (B, Ts) and (B, Tt), 1 for tokens and 0 for padding, may be
// nil when nothing is padded. TgtIn is the target shifted right: bos, y1, …
type Inputs struct {
	Src, SrcMask, TgtIn, TgtMask *gorgonia.Node
}

// Forward maps Src (B, Ts) and TgtIn (B, Tt) to logits (B, Tt, V_tgt).
func (m *Model) Forward(g *layers.Graph, in Inputs) (*gorgonia.Node, error) {
	memory, err := m.Encode(g, in.Src, in.SrcMask)
	if err != nil {
		return nil, err
	}
	h, err := m.decode(g, in.TgtIn, in.TgtMask, memory, in.SrcMask)
	if err != nil {
		return nil, err
	}
	return m.Head(g, h)
}

// Encode maps source ids (B, Ts) with an optional padding mask (B, Ts) to
// the encoder output (B, Ts, D).
func (m *Model) Encode(g *layers.Graph, src, srcMask *gorgonia.Node) (*gorgonia.Node, error) {
	x, err := m.embed(g, m.SrcEmbed, src, "source")
	if err != nil {
		return nil, err
	}
	if x, err = m.Encoder.Forward(g, x, srcMask); err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	return x, nil
}

// decode maps target inputs (B, Tt) to decoder states (B, Tt, D).
func (m *Model) decode(g *layers.Graph, tgtIn, tgtMask, memory, srcMask *gorgonia.Node) (*gorgonia.Node, error) {
	y, err := m.embed(g, m.TgtEmbed, tgtIn, "target")
	if err != nil {
		return nil, err
	}
	if y, err = m.Decoder.Forward(g, y, tgtMask, memory, srcMask); err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	return y, nil
}

// embedScale is what token embeddings are multiplied by: √d_model, or 1
// without scale_embedding.
func (m *Model) embedScale() float64 {
	if m.Config.ScaleEmbedding {
		return math.Sqrt(float64(m.Config.DModel))
	}
	return 1
}

// embed maps ids (B, T) to √d·E[ids] + PE[0…T−1] with dropout, (B, T, D);
// Marian's positions start at 0 (BART's at 2).
func (m *Model) embed(g *layers.Graph, e *layers.Embedding, ids *gorgonia.Node, side string) (*gorgonia.Node, error) {
	if ids == nil || ids.Dims() != 2 {
		return nil, fmt.Errorf("seq2seq: %s ids must be (B, T)", side)
	}
	if t := ids.Shape()[1]; t > m.Config.MaxLen {
		return nil, fmt.Errorf("seq2seq: %s of %d tokens is longer than max_len %d; truncate it or raise max_len", side, t, m.Config.MaxLen)
	}
	x, err := e.ForwardScaled(g, ids, m.embedScale())
	if err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	if x, err = m.Pos.Forward(g, x); err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	return m.drop.Forward(g, x)
}

// Head maps decoder states (B, T, D) to logits (B, T, V_tgt): the output
// projection plus final_logits_bias.
func (m *Model) Head(g *layers.Graph, h *gorgonia.Node) (*gorgonia.Node, error) {
	var logits *gorgonia.Node
	var err error
	if m.LMHead != nil {
		logits, err = m.LMHead.Forward(g, h)
	} else {
		logits, err = m.TgtEmbed.Logits(g, h)
	}
	if err != nil {
		return nil, fmt.Errorf("seq2seq: output projection: %w", err)
	}
	if logits, err = layers.AddBias(g, logits, m.FinalLogitsBias); err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	return logits, nil
}

// Loss is the label-smoothed cross-entropy (Szegedy et al. 2016; the paper
// uses ε = 0.1) of the logits for in against labels (B, Tt) int, the target
// shifted left, averaged over labels that are not layers.IgnoreIndex. It
// returns the scalar loss and the logits (B, Tt, V_tgt).
func (m *Model) Loss(g *layers.Graph, in Inputs, labels *gorgonia.Node, smoothing float64) (loss, logits *gorgonia.Node, err error) {
	if logits, err = m.Forward(g, in); err != nil {
		return nil, nil, err
	}
	if loss, err = layers.CrossEntropy(logits, labels, layers.IgnoreIndex, smoothing); err != nil {
		return nil, nil, fmt.Errorf("seq2seq: loss: %w", err)
	}
	return loss, logits, nil
}

// NumParams is the number of learnable scalars (final_logits_bias is not
// one).
func (m *Model) NumParams() int { return m.Store.NumParams() }

func isBias(name string) bool { return strings.HasSuffix(name, ".bias") }

func isNorm(name string) bool { return strings.Contains(name, "layer_norm.") }

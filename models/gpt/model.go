package gpt

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// Model is a GPT: token and learned position embeddings, a stack of
// pre-norm causal blocks with a final LayerNorm, and an LM head tied to the
// token embedding (or its own, untied). Parameter names are Hugging Face
// GPT-2's keys (transformer.wte.weight, transformer.h.0.attn.c_attn.weight,
// …); only the Conv1D layout differs, and hf.go handles that.
//
// A Model is safe for concurrent use by multiple goroutines for inference:
// Generate, BeamSearch and graphs of a caller's own (Forward, Hidden,
// Loss, a Classifier's Logits) only read the parameters, and runs of the
// model's graphs take turns (they share the store's memory; see
// layers.Machine). What writes the parameters (LoadWeights, training,
// NewClassifier) must not overlap with them.
type Model struct {
	Config Config
	Store  *layers.Store
	WTE    *layers.Embedding         // transformer.wte
	WPE    *layers.LearnedPositional // transformer.wpe
	H      *layers.Encoder           // transformer.h.*, transformer.ln_f
	LMHead *layers.Linear            // lm_head; nil when tied to wte
	drop   layers.Dropout
	graphs graphs // decoding graphs kept between calls (see ReleaseGraphs)
}

// blockNames are GPT-2's names for the parts of a block and the stack.
var blockNames = layers.BlockNames{
	SelfAttn: "attn", SelfAttnNorm: "ln_1", FFNIn: "mlp.c_fc", FFNOut: "mlp.c_proj", FinalNorm: "ln_2",
	Attention: layers.AttentionNames{Query: "c_attn", Out: "c_proj"},
	Layers:    "h", StackNorm: "ln_f",
}

// New builds a model with GPT-2's initialisation: N(0, initializer_range²)
// weights, zero biases, and the residual projections (attn.c_proj,
// mlp.c_proj) scaled by 1/√(2·n_layer) (Radford et al. 2019, §2.3). Options
// set the dtype and seed; they come after the initialiser, so a
// layers.WithInitStd here overrides initializer_range.
func New(cfg Config, opts ...layers.Option) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s, err := layers.NewStore(append([]layers.Option{layers.WithInitStd(cfg.InitializerRange)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	if err := models.CheckParams("gpt", cfg.paramTerms(), int64(s.Dtype().Size())); err != nil {
		return nil, err
	}
	m := &Model{Config: cfg, Store: s, drop: layers.Dropout{P: cfg.EmbdPdrop}}
	tr := s.Root().Sub("transformer")
	if m.WTE, err = layers.NewEmbedding(tr.Sub("wte"), cfg.VocabSize, cfg.NEmbd); err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	if m.WPE, err = layers.NewLearnedPositional(tr.Sub("wpe"), cfg.NPositions, cfg.NEmbd); err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	if m.H, err = layers.NewEncoder(tr, cfg.block(), cfg.NLayer); err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	if !cfg.TieWordEmbeddings {
		if m.LMHead, err = layers.NewLinear(s.Root().Sub("lm_head"), cfg.NEmbd, cfg.VocabSize, false); err != nil {
			return nil, fmt.Errorf("gpt: %w", err)
		}
	}
	scaled := layers.Normal(cfg.InitializerRange / math.Sqrt(2*float64(cfg.NLayer)))
	for i, b := range m.H.Layers {
		b.SelfAttn.Scale = cfg.AttentionScale(i)
		s.Reinit(b.SelfAttn.Out.Weight, scaled)
		s.Reinit(b.FFN.Out.Weight, scaled)
	}
	return m, nil
}

func (c Config) block() layers.BlockConfig {
	return layers.BlockConfig{
		Dim: c.NEmbd, Heads: c.NHead, FFNDim: c.Inner(), Activation: c.ActivationFunction,
		Norm: layers.PreNorm, LayerNormEps: c.LayerNormEpsilon, Dropout: c.ResidPdrop,
		AttentionDropout: c.AttnPdrop, Bias: true, Names: blockNames, Causal: true, FusedQKV: true,
	}
}

// Inputs are a batch's graph inputs. IDs (B, T) are token ids. Mask (B, T),
// 1 for tokens and 0 for padding, may be nil when nothing is padded.
// Positions (B, T) are position ids, or nil for 0…T−1 in every row; a
// left-padded batch counts each row's positions from its first token.
type Inputs struct {
	IDs, Mask, Positions *gorgonia.Node
}

// Forward maps token ids (B, T) to logits (B, T, V).
func (m *Model) Forward(g *layers.Graph, in Inputs) (*gorgonia.Node, error) {
	h, err := m.Hidden(g, in)
	if err != nil {
		return nil, err
	}
	return m.head(g, h)
}

// Hidden maps token ids (B, T) to the final hidden states (B, T, D), after
// ln_f: what the LM head and task heads read.
func (m *Model) Hidden(g *layers.Graph, in Inputs) (*gorgonia.Node, error) {
	h, err := m.embed(g, in)
	if err != nil {
		return nil, err
	}
	if h, err = m.H.Forward(g, h, in.Mask); err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	return h, nil
}

// embed maps ids (B, T) to wte + wpe with embedding dropout, (B, T, D).
func (m *Model) embed(g *layers.Graph, in Inputs) (*gorgonia.Node, error) {
	if in.IDs == nil || in.IDs.Dims() != 2 {
		return nil, fmt.Errorf("gpt: token ids must be (B, T)")
	}
	if t := in.IDs.Shape()[1]; t > m.Config.NPositions && in.Positions == nil {
		return nil, fmt.Errorf("gpt: %d tokens exceed the context of %d (n_positions); crop the input or use Generate's sliding window", t, m.Config.NPositions)
	}
	h, err := m.WTE.Forward(g, in.IDs)
	if err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	if in.Positions != nil {
		h, err = m.WPE.ForwardIDs(g, h, in.Positions)
	} else {
		h, err = m.WPE.Forward(g, h)
	}
	if err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	return m.drop.Forward(g, h)
}

// head maps hidden states (B, T, D) to logits (B, T, V).
func (m *Model) head(g *layers.Graph, h *gorgonia.Node) (*gorgonia.Node, error) {
	var logits *gorgonia.Node
	var err error
	if m.LMHead != nil {
		logits, err = m.LMHead.Forward(g, h)
	} else {
		logits, err = m.WTE.Logits(g, h)
	}
	if err != nil {
		return nil, fmt.Errorf("gpt: lm head: %w", err)
	}
	return logits, nil
}

// Loss is the mean next-token cross-entropy of the logits for in against
// targets (B, T) int, skipping targets equal to layers.IgnoreIndex (padding,
// prompts). It returns the scalar loss and the logits (B, T, V).
func (m *Model) Loss(g *layers.Graph, in Inputs, targets *gorgonia.Node) (loss, logits *gorgonia.Node, err error) {
	if logits, err = m.Forward(g, in); err != nil {
		return nil, nil, err
	}
	if loss, err = layers.CrossEntropy(logits, targets, layers.IgnoreIndex, 0); err != nil {
		return nil, nil, fmt.Errorf("gpt: loss: %w", err)
	}
	return loss, logits, nil
}

// NumParams is the number of learnable scalars.
func (m *Model) NumParams() int { return m.Store.NumParams() }

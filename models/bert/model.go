package bert

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/internal/ops"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// ModelType is the model_type of a BERT config.json.
const ModelType = "bert"

// Model is BERT's backbone, transformers' BertModel: word, learned
// position and token-type embeddings summed, LayerNorm and dropout; a stack
// of post-norm encoder blocks; and the pooler, dense + tanh on the first
// ([CLS]) token, which the token-classification and QA heads remove, as
// transformers builds them (add_pooling_layer=False). Parameter names are Hugging Face's keys under "bert."
// (bert.embeddings.word_embeddings.weight,
// bert.encoder.layer.0.attention.self.query.weight, …), so a checkpoint
// loads key by key (hf.go). A RoBERTa (Config.ModelType
// RobertaModelType) is transformers' RobertaModel: the same under
// "roberta.", with position ids from pad_token_id + 1 (see embed). A
// DistilBERT (DistilBertModelType) is transformers' DistilBertModel:
// distilbert.embeddings.* without token types,
// distilbert.transformer.layer.N.* (q_lin, sa_layer_norm, ffn.lin1, …),
// and no pooler. An ELECTRA (ElectraModelType) is transformers'
// ElectraModel: electra.embeddings.* at embedding_size,
// electra.embeddings_project to hidden_size when the two differ,
// electra.encoder.layer.N.* as BERT's, and no pooler.
//
// A Model, and every head on it, is safe for concurrent use by multiple
// goroutines for inference: Attentions, HiddenStates, FillMask and graphs
// of a caller's own (Hidden, Pooled, the heads' Logits) only read the
// parameters, and
// runs of the model's graphs take turns (they share the store's memory;
// see layers.Machine). What writes the parameters (LoadWeights, training,
// putting a head on it) must not overlap with them.
type Model struct {
	Config              Config
	Store               *layers.Store
	WordEmbeddings      *layers.Embedding         // bert.embeddings.word_embeddings
	PositionEmbeddings  *layers.LearnedPositional // bert.embeddings.position_embeddings
	TokenTypeEmbeddings *layers.Embedding         // bert.embeddings.token_type_embeddings; nil for a DistilBERT
	EmbeddingsNorm      *layers.LayerNorm         // bert.embeddings.LayerNorm
	// EmbeddingsProject maps the embeddings (embedding_size) to hidden_size:
	// an ALBERT's albert.encoder.embedding_hidden_mapping_in, or an
	// ELECTRA's electra.embeddings_project when the two sizes differ; nil
	// otherwise.
	EmbeddingsProject *layers.Linear
	// Encoder is bert.encoder.layer.*; an ALBERT's lists its shared
	// blocks once per use (see newAlbertEncoder).
	Encoder *layers.Encoder
	Pooler  *layers.Linear // bert.pooler.dense; nil for the heads without one (see dropPooler) and a DistilBERT
	drop    layers.Dropout
	arch    string // the head class a NewFor* put on it, for Save; "" to infer it
}

// blockNames are BERT's names for the parts of a layer and the stack.
var blockNames = layers.BlockNames{
	SelfAttn: "attention", SelfAttnNorm: "attention.output.LayerNorm",
	FFNIn: "intermediate.dense", FFNOut: "output.dense", FinalNorm: "output.LayerNorm",
	Attention: layers.AttentionNames{Query: "self.query", Key: "self.key", Value: "self.value", Out: "output.dense"},
	Layers:    "layer",
}

func (c Config) block() layers.BlockConfig {
	return layers.BlockConfig{
		Dim: c.HiddenSize, Heads: c.NumAttentionHeads, FFNDim: c.IntermediateSize, Activation: c.HiddenAct,
		Norm: layers.PostNorm, LayerNormEps: c.LayerNormEps, Dropout: c.HiddenDropoutProb,
		AttentionDropout: c.AttentionProbsDropoutProb, Bias: true, Names: c.variant().blocks,
	}
}

// New builds the backbone with Hugging Face's initialisation
// (BertPreTrainedModel._init_weights): N(0, initializer_range²) weights and
// embeddings, the pad_token_id row of the word embeddings zero, zero
// biases, LayerNorms 1 and 0. Options set the dtype and seed.
//
// transformers' word embedding also has padding_idx, which keeps that
// row's gradient zero; here the row gets the gradient of the pad tokens'
// own outputs, which is zero whenever padding is masked and carries no
// MLM label.
func New(cfg Config, opts ...layers.Option) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s, err := layers.NewStore(append([]layers.Option{layers.WithInitStd(cfg.InitializerRange)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	if err := models.CheckParams("bert", cfg.paramTerms(), int64(s.Dtype().Size())); err != nil {
		return nil, err
	}
	m := &Model{Config: cfg, Store: s, drop: layers.Dropout{P: cfg.HiddenDropoutProb}}
	v := cfg.variant()
	root := s.Root().Sub(v.prefix)
	emb := root.Sub("embeddings")
	d := cfg.embeddingSize() // hidden_size, or ALBERT's and ELECTRA's embedding_size
	if m.WordEmbeddings, err = layers.NewEmbedding(emb.Sub("word_embeddings"), cfg.VocabSize, d); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	if m.PositionEmbeddings, err = layers.NewLearnedPositional(emb.Sub("position_embeddings"), cfg.MaxPositionEmbeddings, d); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	if cfg.SinusoidalPosEmbds { // DistilBERT's fixed table (distilbert_sinusoidal.go)
		s.Reinit(m.PositionEmbeddings.Weight, sinusoidalInit)
	}
	if !v.noTokenTypes {
		if m.TokenTypeEmbeddings, err = layers.NewEmbedding(emb.Sub("token_type_embeddings"), cfg.TypeVocabSize, d); err != nil {
			return nil, fmt.Errorf("bert: %w", err)
		}
	}
	if m.EmbeddingsNorm, err = layers.NewLayerNorm(emb.Sub("LayerNorm"), d, cfg.LayerNormEps, true); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	if v == albertVariant {
		err = m.newAlbertEncoder(root.Sub(v.encoder))
	} else {
		if m.EmbeddingsProject, err = newEmbeddingsProject(root, cfg); err != nil {
			return nil, fmt.Errorf("bert: %w", err)
		}
		m.Encoder, err = layers.NewEncoder(root.Sub(v.encoder), cfg.block(), cfg.NumHiddenLayers)
	}
	if err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	if !v.noPooler {
		pooler := root.Sub("pooler").Sub("dense")
		if v.pooler != "" {
			pooler = scope(s, v.prefix+"."+v.pooler)
		}
		if m.Pooler, err = layers.NewLinear(pooler, cfg.HiddenSize, cfg.HiddenSize, true); err != nil {
			return nil, fmt.Errorf("bert: %w", err)
		}
	}
	zeroRow(m.WordEmbeddings.Weight, cfg.PadTokenID)
	if v.paddedPositions { // RobertaEmbeddings' position table has padding_idx too
		zeroRow(m.PositionEmbeddings.Weight, cfg.PadTokenID)
	}
	return m, nil
}

// zeroRow sets row r of the (N, D) parameter p to zero.
func zeroRow(p *layers.Param, r int) {
	d := p.Value.Shape()[1]
	switch v := p.Value.Data().(type) {
	case []float32:
		clear(v[r*d : (r+1)*d])
	case []float64:
		clear(v[r*d : (r+1)*d])
	}
}

// Inputs are a batch's graph inputs. IDs (B, T) are int token ids.
// TokenTypes (B, T) int are segment ids (0 for the first sentence, 1 for
// the second), or nil for all 0. Mask (B, T) float, 1 for tokens and 0 for
// padding, may be nil when nothing is padded.
type Inputs struct {
	IDs, TokenTypes, Mask *gorgonia.Node
}

// Hidden maps a batch (B, T) to the last layer's hidden states (B, T, D),
// transformers' last_hidden_state. T beyond max_position_embeddings is an
// error; a token or token-type id outside its table is an error when the
// graph runs.
func (m *Model) Hidden(g *layers.Graph, in Inputs) (*gorgonia.Node, error) {
	h, err := m.embed(g, in)
	if err != nil {
		return nil, err
	}
	if h, err = m.Encoder.Forward(g, h, in.Mask); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	return h, nil
}

// embed maps a batch (B, T) to LN(word + position + token type) with
// dropout, (B, T, D). BERT's positions are 0…T−1; RoBERTa's are computed
// from the ids (ops.PaddedPositions): padding_idx + 1 on, counting only
// the non-pad tokens, padding_idx for a pad.
func (m *Model) embed(g *layers.Graph, in Inputs) (*gorgonia.Node, error) {
	if in.IDs == nil || in.IDs.Dims() != 2 {
		return nil, fmt.Errorf("bert: token ids must be (B, T)")
	}
	b, t := in.IDs.Shape()[0], in.IDs.Shape()[1]
	v := m.Config.variant()
	if v.paddedPositions && t > m.Config.MaxTokens() {
		return nil, fmt.Errorf("bert: %d tokens exceed the %d a %s takes (max_position_embeddings %d − padding_idx %d − 1: its positions start at padding_idx + 1); truncate the input",
			t, m.Config.MaxTokens(), v.name, m.Config.MaxPositionEmbeddings, m.Config.PadTokenID)
	}
	if t > m.Config.MaxPositionEmbeddings {
		return nil, fmt.Errorf("bert: %d tokens exceed the %d positions (max_position_embeddings); truncate the input", t, m.Config.MaxPositionEmbeddings)
	}
	types := in.TokenTypes
	if v.noTokenTypes {
		if types != nil {
			return nil, fmt.Errorf("bert: token type ids given to a %s, which has no token types (no token_type_embeddings); leave Inputs.TokenTypes nil", v.name)
		}
	} else if types == nil {
		var err error
		if types, err = g.IntConstant("token_type_ids", make([]int, b*t), b, t); err != nil {
			return nil, fmt.Errorf("bert: %w", err)
		}
	} else if types.Dims() != 2 || types.Shape()[0] != b || types.Shape()[1] != t {
		return nil, fmt.Errorf("bert: token type ids %v must be (B, T) = (%d, %d)", types.Shape(), b, t)
	}
	h, err := m.WordEmbeddings.Forward(g, in.IDs)
	if err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	if !v.noTokenTypes {
		tt, err := m.TokenTypeEmbeddings.Forward(g, types)
		if err != nil {
			return nil, fmt.Errorf("bert: token types: %w", err)
		}
		if h, err = ops.Add(h, tt); err != nil {
			return nil, fmt.Errorf("bert: embeddings: %w", err)
		}
	}
	if v.paddedPositions {
		pos, err := ops.PaddedPositions(in.IDs, m.Config.PadTokenID)
		if err != nil {
			return nil, fmt.Errorf("bert: position ids: %w", err)
		}
		if h, err = m.PositionEmbeddings.ForwardIDs(g, h, pos); err != nil {
			return nil, fmt.Errorf("bert: %w", err)
		}
	} else if m.Config.SinusoidalPosEmbds {
		if h, err = m.addSinusoidal(g, h); err != nil {
			return nil, err
		}
	} else if h, err = m.PositionEmbeddings.Forward(g, h); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	if h, err = m.EmbeddingsNorm.Forward(g, h); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	if h, err = m.drop.Forward(g, h); err != nil || m.EmbeddingsProject == nil {
		return h, err
	}
	if h, err = m.EmbeddingsProject.Forward(g, h); err != nil { // ALBERT, ELECTRA: embedding_size → hidden_size
		return nil, fmt.Errorf("bert: embeddings projection: %w", err)
	}
	return h, nil
}

// Pool maps hidden states h (B, T, D) to the pooled output (B, D):
// tanh(dense(h[:, 0])), the [CLS] token through the pooler. A model
// without a pooler (a token classifier's or QA model's) returns an error.
func (m *Model) Pool(g *layers.Graph, h *gorgonia.Node) (*gorgonia.Node, error) {
	b := h.Shape()[0]
	first, err := g.IntConstant("cls_index", make([]int, b), b)
	if err != nil {
		return nil, fmt.Errorf("bert: pooler: %w", err)
	}
	cls, err := layers.SelectTokens(h, first)
	if err != nil {
		return nil, fmt.Errorf("bert: pooler: %w", err)
	}
	return m.pool(g, cls)
}

// pool is the pooler on the [CLS] states (B, D).
func (m *Model) pool(g *layers.Graph, cls *gorgonia.Node) (*gorgonia.Node, error) {
	if m.Pooler == nil {
		return nil, fmt.Errorf("bert: pooler: this model has none (token classification and question answering are built without one, as transformers' add_pooling_layer=False); pool a model made by New")
	}
	y, err := m.Pooler.Forward(g, cls)
	if err != nil {
		return nil, fmt.Errorf("bert: pooler: %w", err)
	}
	if y, err = gorgonia.Tanh(y); err != nil {
		return nil, fmt.Errorf("bert: pooler: %w", err)
	}
	return y, nil
}

// Pooled maps a batch (B, T) to the pooled output (B, D), transformers'
// pooler_output (see Pool). The last layer runs for [CLS] alone
// (layers.Encoder.ForwardFirst): the same output and gradients without
// that layer's query, output projection and feed-forward for the other
// tokens, which sequence classification never reads.
func (m *Model) Pooled(g *layers.Graph, in Inputs) (*gorgonia.Node, error) {
	h, err := m.embed(g, in)
	if err != nil {
		return nil, err
	}
	if h, err = m.Encoder.ForwardFirst(g, h, in.Mask); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	cls, err := gorgonia.Reshape(h, []int{h.Shape()[0], h.Shape()[2]})
	if err != nil {
		return nil, fmt.Errorf("bert: pooler: %w", err)
	}
	return m.pool(g, cls)
}

// dropPooler removes the pooler from m, as transformers builds
// BertForTokenClassification and BertForQuestionAnswering
// (add_pooling_layer=False): their checkpoints have no bert.pooler.*
// tensors, and neither does the model in memory. The pooler's random
// values were drawn before it goes, so the heads created after it start
// from the same values as before.
func (m *Model) dropPooler() error {
	if m.Pooler == nil {
		return nil
	}
	if err := m.Store.Remove(m.Pooler.Weight.Name, m.Pooler.Bias.Name); err != nil {
		return fmt.Errorf("bert: %w", err)
	}
	m.Pooler = nil
	return nil
}

// NumParams is the number of learnable scalars, heads included.
func (m *Model) NumParams() int { return m.Store.NumParams() }

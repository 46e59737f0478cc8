package llama

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// Model is the LLaMA-style decoder without a head, Hugging Face's
// LlamaModel (Qwen2Model, MistralModel): token embeddings, a stack of
// pre-norm causal blocks (RMSNorm, grouped-query attention with rotary
// position embeddings at each token's absolute position, RMSNorm, SwiGLU)
// and a final RMSNorm. Its parameters carry Hugging Face's names
// (model.embed_tokens.weight, model.layers.0.self_attn.q_proj.weight, …,
// model.norm.weight), with the biases of Config.Biases.
//
// A Model, and the ForCausalLM and ForSequenceClassification built on
// it, is safe for concurrent use by multiple goroutines for inference:
// graphs only read the parameters, and runs of the model's graphs take
// turns (they share the store's memory; see layers.Machine). What writes
// the parameters (loading, training) must not overlap with them.
type Model struct {
	Config      Config
	Store       *layers.Store
	EmbedTokens *layers.Embedding // model.embed_tokens
	Layers      *layers.Encoder   // model.layers.*, model.norm
	Rotary      *layers.Rotary    // the rotation every attention applies (Config.Rope's frequencies)
}

// blockNames are Hugging Face's names for the parts of a decoder layer
// and of the stack.
var blockNames = layers.BlockNames{
	SelfAttn: "self_attn", SelfAttnNorm: "input_layernorm", FinalNorm: "post_attention_layernorm",
	Attention: layers.AttentionNames{Query: "q_proj", Key: "k_proj", Value: "v_proj", Out: "o_proj"},
	Layers:    "layers", StackNorm: "norm",
}

// New builds the decoder c describes in a new store, initialised as
// transformers' LlamaPreTrainedModel does: N(0, initializer_range²)
// weights and embeddings, zero biases, unit RMSNorm weights. Options set
// the dtype and seed; they come after the initialiser, so a
// layers.WithInitStd here overrides initializer_range. c is validated and
// its float32 parameters checked against the machine's memory.
func New(c Config, opts ...layers.Option) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	rope, err := c.Rope()
	if err != nil {
		return nil, err
	}
	inv, err := rope.InvFreq(c.HeadDimension())
	if err != nil {
		return nil, err
	}
	rot, err := layers.NewRotaryFreqs(c.HeadDimension(), inv)
	if err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	s, err := layers.NewStore(append([]layers.Option{layers.WithInitStd(c.InitializerRange)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	if err := models.CheckParams(c.ModelType, c.paramTerms(), int64(s.Dtype().Size())); err != nil {
		return nil, err
	}
	m := &Model{Config: c, Store: s, Rotary: rot}
	root := s.Root().Sub("model")
	if m.EmbedTokens, err = layers.NewEmbedding(root.Sub("embed_tokens"), c.VocabSize, c.HiddenSize); err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	if m.Layers, err = layers.NewEncoder(root, c.block(rot), c.NumHiddenLayers); err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	return m, nil
}

// block is c's decoder layer.
func (c Config) block(rot *layers.Rotary) layers.BlockConfig {
	b := c.Biases()
	return layers.BlockConfig{
		Dim: c.HiddenSize, Heads: c.NumAttentionHeads, KVHeads: c.KVHeads(), HeadDim: c.HeadDimension(),
		FFNDim: c.IntermediateSize, Activation: "silu", Norm: layers.PreNorm, AttentionDropout: c.AttentionDropout,
		Bias:            b.QKV || b.O,
		AttentionNoBias: layers.AttentionBiases{Query: !b.QKV, Key: !b.QKV, Value: !b.QKV, Out: !b.O},
		Causal:          true, Positions: rot, Names: blockNames,
		NewNorm: layers.RMSNorms(c.RMSNormEps), NewMLP: layers.SwiGLUs("mlp", b.MLP),
	}
}

// Inputs are a batch's graph inputs. IDs (B, T) int are token ids. Mask
// (B, T), 1 for tokens and 0 for padding, may be nil when nothing is
// padded. Positions (B, T) int are the position ids the rotation uses, or
// nil for 0…T−1 in every row; a left-padded batch needs each row's
// positions counted from its first token (PositionIDs), as transformers'
// generate derives them from the attention mask.
type Inputs struct {
	IDs, Mask, Positions *gorgonia.Node
}

// PositionIDs are the position ids (B·T, row-major) of a batch whose
// attention mask (B·T, 1 for a token, 0 for padding) has rows of t
// tokens, as transformers' generate derives them:
// cumsum(mask) − 1, with padding set to 1. It refuses a mask whose length
// is not a multiple of t.
func PositionIDs(mask []float64, t int) ([]int, error) {
	if t <= 0 || len(mask)%t != 0 {
		return nil, fmt.Errorf("llama: a mask of %d values is not rows of %d tokens", len(mask), t)
	}
	pos := make([]int, len(mask))
	for r := 0; r < len(mask); r += t {
		n := 0
		for j := r; j < r+t; j++ {
			if mask[j] != 0 {
				pos[j] = n
				n++
			} else {
				pos[j] = 1
			}
		}
	}
	return pos, nil
}

// Hidden maps token ids (B, T) to the final hidden states (B, T, D), after
// the final norm: what the heads read. It refuses T that CheckLength
// refuses.
func (m *Model) Hidden(g *layers.Graph, in Inputs) (*gorgonia.Node, error) {
	if in.IDs == nil || in.IDs.Dims() != 2 {
		return nil, fmt.Errorf("llama: token ids must be (B, T)")
	}
	if err := m.Config.CheckLength(in.IDs.Shape()[1]); err != nil {
		return nil, err
	}
	h, err := m.EmbedTokens.Forward(g, in.IDs)
	if err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	if h, err = m.Layers.ForwardAt(g, h, in.Mask, in.Positions); err != nil {
		return nil, fmt.Errorf("llama: %w", err)
	}
	return h, nil
}

// NumParams is the number of learnable scalars.
func (m *Model) NumParams() int { return m.Store.NumParams() }

// Decay reports whether a parameter gets weight decay: matrices do,
// except the token embedding; biases and RMSNorm weights (vectors) never
// do.
func (m *Model) Decay(name string, shape []int) bool {
	return layers.DecayExcept(m.EmbedTokens.Weight.Name)(name, shape)
}

// ForCausalLM is the decoder with its language-model head, Hugging Face's
// LlamaForCausalLM (Qwen2ForCausalLM, MistralForCausalLM): lm_head, (V, D)
// without bias, or the token embedding's transpose when
// tie_word_embeddings. It is safe for concurrent use as Model is;
// Generate and BeamSearch each take graphs and KV caches of their own.
type ForCausalLM struct {
	*Model
	LMHead  *layers.Linear // lm_head; nil when tied to model.embed_tokens
	graphs  layers.CausalGraphs
	weights models.WeightFormat // the weights' format after loading; "" is float32
}

// WeightFormat is the format the model's weight matrices are held in:
// models.WeightsF32 unless loaded with models.WithWeightFormat. A model
// in a reduced format is for inference: a gradient through it is an
// error naming the weight, and Save is refused.
func (m *ForCausalLM) WeightFormat() models.WeightFormat {
	if m.weights == "" {
		return models.WeightsF32
	}
	return m.weights
}

// matrices are the layers whose weights reduce converts: the token
// embedding, each layer's q, k, v, o, gate, up and down projections, and
// the untied LM head.
func (m *ForCausalLM) matrices() ([]models.Reducible, error) {
	ls := []models.Reducible{m.EmbedTokens}
	for i, b := range m.Layers.Layers {
		a := b.SelfAttn
		if a.Key == nil {
			return nil, fmt.Errorf("llama: layer %d has a fused query-key-value projection, which reduced weights do not implement", i)
		}
		mlp, ok := b.MLP.(*layers.SwiGLU)
		if !ok {
			return nil, fmt.Errorf("llama: layer %d's MLP is a %T, not SwiGLU", i, b.MLP)
		}
		ls = append(ls, a.Query, a.Key, a.Value, a.Out, mlp.Gate, mlp.Up, mlp.Down)
	}
	if m.LMHead != nil {
		ls = append(ls, m.LMHead)
	}
	return ls, nil
}

// reduce converts every weight matrix to format f (nothing for float32),
// dropping the float32 values: the token embedding, each layer's q, k, v
// and o projections and its SwiGLU's gate, up and down, and the untied
// LM head. It runs before any graph is built.
func (m *ForCausalLM) reduce(f models.WeightFormat) error {
	reduced, err := f.Reduced()
	if err != nil || !reduced {
		return err
	}
	ls, err := m.matrices()
	if err != nil {
		return err
	}
	if err := models.ReduceWeights("llama", m.Store, f, ls...); err != nil {
		return err
	}
	m.weights = f
	return nil
}

// loadReducer prepares the conversion of every weight matrix to format f
// as a load reads it (nil for float32): see reduce.
func (m *ForCausalLM) loadReducer(f models.WeightFormat) (*models.LoadReducer, error) {
	reduced, err := f.Reduced()
	if err != nil || !reduced {
		return nil, err
	}
	ls, err := m.matrices()
	if err != nil {
		return nil, err
	}
	return models.NewLoadReducer("llama", m.Store, f, ls...)
}

// NewForCausalLM builds a causal LM (see New).
func NewForCausalLM(c Config, opts ...layers.Option) (*ForCausalLM, error) {
	m, err := New(c, opts...)
	if err != nil {
		return nil, err
	}
	lm := &ForCausalLM{Model: m}
	if !c.TieWordEmbeddings {
		if lm.LMHead, err = layers.NewLinear(m.Store.Root().Sub("lm_head"), c.HiddenSize, c.VocabSize, false); err != nil {
			return nil, fmt.Errorf("llama: %w", err)
		}
	}
	return lm, nil
}

// Forward maps token ids (B, T) to logits (B, T, V).
func (m *ForCausalLM) Forward(g *layers.Graph, in Inputs) (*gorgonia.Node, error) {
	h, err := m.Hidden(g, in)
	if err != nil {
		return nil, err
	}
	return m.head(g, h)
}

// head maps hidden states (B, T, D) to logits (B, T, V).
func (m *ForCausalLM) head(g *layers.Graph, h *gorgonia.Node) (*gorgonia.Node, error) {
	var logits *gorgonia.Node
	var err error
	if m.LMHead != nil {
		logits, err = m.LMHead.Forward(g, h)
	} else {
		logits, err = m.EmbedTokens.Logits(g, h)
	}
	if err != nil {
		return nil, fmt.Errorf("llama: lm head: %w", err)
	}
	return logits, nil
}

// Loss is the mean next-token cross-entropy of the logits for in against
// targets (B, T) int, skipping targets equal to layers.IgnoreIndex
// (padding, prompts): targets are the ids shifted by one, as transformers'
// labels are before its shift. It returns the scalar loss and the logits
// (B, T, V).
func (m *ForCausalLM) Loss(g *layers.Graph, in Inputs, targets *gorgonia.Node) (loss, logits *gorgonia.Node, err error) {
	if logits, err = m.Forward(g, in); err != nil {
		return nil, nil, err
	}
	if loss, err = layers.CrossEntropy(logits, targets, layers.IgnoreIndex, 0); err != nil {
		return nil, nil, fmt.Errorf("llama: loss: %w", err)
	}
	return loss, logits, nil
}

// Decay reports whether a parameter gets weight decay: Model.Decay's
// rule, the untied lm_head included.
func (m *ForCausalLM) Decay(name string, shape []int) bool { return m.Model.Decay(name, shape) }

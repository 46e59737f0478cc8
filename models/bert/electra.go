package bert

// ELECTRA (model_type "electra", Clark et al. 2020) is BERT's encoder
// under transformers' modeling_electra.py names: electra.embeddings.* at
// embedding_size, electra.embeddings_project (embedding_size →
// hidden_size) when the two differ, electra.encoder.layer.N.* as BERT's,
// no pooler, and its own heads: discriminator_predictions (dense →
// hidden_act → dense_prediction, one logit per token) for
// ElectraForPreTraining, generator_predictions (dense to embedding_size →
// GELU → LayerNorm) and generator_lm_head (tied, with its bias) for
// ElectraForMaskedLM, and ElectraClassificationHead (RoBERTa's, with GELU
// for tanh) for sequence classification.

import (
	"encoding/json"
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// ElectraModelType is the model_type of an ELECTRA config.json, and the
// Config.ModelType that builds one.
const ElectraModelType = "electra"

var electraVariant = &variant{
	modelType: ElectraModelType, configType: ElectraModelType, name: "ELECTRA", family: "electra config", class: "Electra",
	prefix: "electra", encoder: "encoder", blocks: blockNames,
	mlm: mlmNames{dense: "generator_predictions.dense", norm: "generator_predictions.LayerNorm", bias: "generator_lm_head.bias",
		decoderWeight: "generator_lm_head.weight", decoderBias: "generator_lm_head.bias", gelu: true},
	noPooler:  true,
	cls:       &clsHead{dense: "classifier.dense", out: "classifier.out_proj", act: "gelu"},
	wordPiece: true, mask: MaskToken, specials: [3]string{"[CLS]", "[SEP]", "[UNK]"},
	tokenizer: "a WordPiece tokenizer (BERT's, with the BertNormalizer and BertPreTokenizer)",
}

// embeddingSize is the width of the embeddings: an ELECTRA's
// embedding_size, else (and when it is 0) hidden_size.
func (c Config) embeddingSize() int {
	if c.EmbeddingSize == 0 {
		return c.HiddenSize
	}
	return c.EmbeddingSize
}

// embeddingTerms are the word, position and token type tables' terms at
// width e: ALBERT's and ELECTRA's embedding_size.
func (c Config) embeddingTerms(e int64) []models.Term {
	v, p, ty := int64(c.VocabSize), int64(c.MaxPositionEmbeddings), int64(c.TypeVocabSize)
	return []models.Term{
		{What: fmt.Sprintf("word_embeddings, vocab_size %d × embedding_size %d", v, e), Lower: "vocab_size", N: models.Mul(v, e)},
		{What: fmt.Sprintf("position_embeddings, max_position_embeddings %d × embedding_size %d", p, e), Lower: "max_position_embeddings", N: models.Mul(p, e)},
		{What: fmt.Sprintf("token_type_embeddings, type_vocab_size %d × embedding_size %d", ty, e), Lower: "type_vocab_size", N: models.Mul(ty, e)},
	}
}

// newEmbeddingsProject is an ELECTRA's embeddings_project in root (its
// electra scope) when embedding_size is not hidden_size, else nil.
func newEmbeddingsProject(root layers.Scope, c Config) (*layers.Linear, error) {
	if e := c.embeddingSize(); e != c.HiddenSize {
		return layers.NewLinear(root.Sub("embeddings_project"), e, c.HiddenSize, true)
	}
	return nil, nil
}

// electraParamTerms are paramTerms for an ELECTRA: the embeddings at
// embedding_size e, their LayerNorm 2e, embeddings_project e·d + d when e
// ≠ d, the layers, no pooler.
func (c Config) electraParamTerms(perLayer int64) []models.Term {
	e, d, l := int64(c.embeddingSize()), int64(c.HiddenSize), int64(c.NumHiddenLayers)
	terms := append(c.embeddingTerms(e), []models.Term{
		{What: fmt.Sprintf("the layers, num_hidden_layers %d × %s per layer (hidden_size %d, intermediate_size %d)", l, models.Count(perLayer), d, c.IntermediateSize),
			Lower: "num_hidden_layers, hidden_size or intermediate_size", N: models.Mul(l, perLayer)},
		{What: "the embedding LayerNorm", Lower: "embedding_size", N: models.Mul(2, e)},
	}...)
	if e != d {
		terms = append(terms, models.Term{What: fmt.Sprintf("embeddings_project, embedding_size %d × hidden_size %d", e, d), Lower: "embedding_size or hidden_size", N: models.Sum(models.Mul(e, d), d)})
	}
	return terms
}

// electraConfig is an ELECTRA config.json under ElectraConfig's names;
// electraCodec converts it to and from Config.
type electraConfig struct {
	VocabSize                 int                        `json:"vocab_size"`
	EmbeddingSize             int                        `json:"embedding_size"`
	HiddenSize                int                        `json:"hidden_size"`
	NumHiddenLayers           int                        `json:"num_hidden_layers"`
	NumAttentionHeads         int                        `json:"num_attention_heads"`
	IntermediateSize          int                        `json:"intermediate_size"`
	HiddenAct                 string                     `json:"hidden_act"`
	HiddenDropoutProb         float64                    `json:"hidden_dropout_prob"`
	AttentionProbsDropoutProb float64                    `json:"attention_probs_dropout_prob"`
	MaxPositionEmbeddings     int                        `json:"max_position_embeddings"`
	TypeVocabSize             int                        `json:"type_vocab_size"`
	InitializerRange          float64                    `json:"initializer_range"`
	LayerNormEps              float64                    `json:"layer_norm_eps"`
	PadTokenID                int                        `json:"pad_token_id"`
	PositionEmbeddingType     string                     `json:"position_embedding_type"`
	ClassifierDropout         *float64                   `json:"classifier_dropout"`
	ID2Label                  map[string]string          `json:"id2label,omitempty"`
	Extra                     map[string]json.RawMessage `json:"-"`
}

// electraDefaults are ElectraConfig's defaults, which are
// google/electra-small-discriminator's shape.
func electraDefaults() electraConfig {
	return electraConfig{VocabSize: 30522, EmbeddingSize: 128, HiddenSize: 256, NumHiddenLayers: 12, NumAttentionHeads: 4,
		IntermediateSize: 1024, HiddenAct: "gelu", HiddenDropoutProb: 0.1, AttentionProbsDropoutProb: 0.1, MaxPositionEmbeddings: 512,
		TypeVocabSize: 2, InitializerRange: 0.02, LayerNormEps: 1e-12, PositionEmbeddingType: "absolute"}
}

// electraCodecJSON reads and writes ElectraConfig's keys; its summary_*
// keys (ElectraForMultipleChoice's SequenceSummary, which zoo does not
// build) are kept, and written with ElectraConfig's defaults.
var electraCodecJSON = models.NewCodec(models.Descriptor[electraConfig]{
	Family: "electra config", ModelType: ElectraModelType, Defaults: electraDefaults, Refused: refused,
	Inert: func(electraConfig) map[string]any {
		return map[string]any{"summary_type": "first", "summary_use_proj": true, "summary_activation": "gelu", "summary_last_dropout": 0.1}
	},
})

// electraCodec is electraCodecJSON on Config (configCodec).
var electraCodec = renamedCodec[electraConfig]{json: electraCodecJSON, to: toElectra, from: fromElectra}

func toElectra(c Config) electraConfig {
	return electraConfig{VocabSize: c.VocabSize, EmbeddingSize: c.embeddingSize(), HiddenSize: c.HiddenSize, NumHiddenLayers: c.NumHiddenLayers,
		NumAttentionHeads: c.NumAttentionHeads, IntermediateSize: c.IntermediateSize, HiddenAct: c.HiddenAct, HiddenDropoutProb: c.HiddenDropoutProb,
		AttentionProbsDropoutProb: c.AttentionProbsDropoutProb, MaxPositionEmbeddings: c.MaxPositionEmbeddings, TypeVocabSize: c.TypeVocabSize,
		InitializerRange: c.InitializerRange, LayerNormEps: c.LayerNormEps, PadTokenID: c.PadTokenID, PositionEmbeddingType: c.PositionEmbeddingType,
		ClassifierDropout: c.ClassifierDropout, ID2Label: c.ID2Label, Extra: c.Extra}
}

func fromElectra(e electraConfig) Config {
	return Config{ModelType: ElectraModelType, VocabSize: e.VocabSize, EmbeddingSize: e.EmbeddingSize, HiddenSize: e.HiddenSize,
		NumHiddenLayers: e.NumHiddenLayers, NumAttentionHeads: e.NumAttentionHeads, IntermediateSize: e.IntermediateSize, HiddenAct: e.HiddenAct,
		HiddenDropoutProb: e.HiddenDropoutProb, AttentionProbsDropoutProb: e.AttentionProbsDropoutProb, MaxPositionEmbeddings: e.MaxPositionEmbeddings,
		TypeVocabSize: e.TypeVocabSize, InitializerRange: e.InitializerRange, LayerNormEps: e.LayerNormEps, PadTokenID: e.PadTokenID,
		PositionEmbeddingType: e.PositionEmbeddingType, ClassifierDropout: e.ClassifierDropout, ID2Label: e.ID2Label, Extra: e.Extra}
}

// ElectraSmall is google/electra-small-discriminator
// (https://huggingface.co/google/electra-small-discriminator/blob/main/config.json),
// ElectraConfig's defaults: 12 layers, 4 heads, 256 wide, 1024 inner,
// embeddings 128 wide projected to 256, 30,522 tokens, 512 positions, 2
// token types: 13,483,008 parameters (ElectraModel).
func ElectraSmall() Config { return fromElectra(electraDefaults()) }

// ElectraSmallGenerator is google/electra-small-generator: ElectraSmall's
// embeddings (128 wide) and 12 layers at a quarter of its width (64
// wide, 1 head, 256 inner), whose embeddings the discriminator shares in
// pretraining.
func ElectraSmallGenerator() Config {
	c := ElectraSmall()
	c.HiddenSize, c.NumAttentionHeads, c.IntermediateSize = 64, 1, 256
	return c
}

// ElectraForPreTraining is transformers' ElectraForPreTraining, the
// discriminator: the backbone and discriminator_predictions, dense (d, d)
// → hidden_act → dense_prediction (1, d), one logit per token: how likely
// the token was replaced.
type ElectraForPreTraining struct {
	*Model
	Dense      *layers.Linear // discriminator_predictions.dense
	Prediction *layers.Linear // discriminator_predictions.dense_prediction
	act        layers.Activation
}

// NewElectraForPreTraining builds an ELECTRA (cfg.ModelType
// ElectraModelType) with the discriminator head; another model type is an
// error.
func NewElectraForPreTraining(cfg Config, opts ...layers.Option) (*ElectraForPreTraining, error) {
	if cfg.ModelType != ElectraModelType {
		return nil, fmt.Errorf("bert: model type %q has no replaced-token-detection head (ElectraForPreTraining is an ELECTRA's, model_type %q)", cfg.ModelType, ElectraModelType)
	}
	m, err := New(cfg, opts...)
	if err != nil {
		return nil, err
	}
	p := &ElectraForPreTraining{Model: m}
	if p.act, err = layers.ParseActivation(cfg.HiddenAct); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	s := m.Store.Root().Sub("discriminator_predictions")
	if p.Dense, err = layers.NewLinear(s.Sub("dense"), cfg.HiddenSize, cfg.HiddenSize, true); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	if p.Prediction, err = layers.NewLinear(s.Sub("dense_prediction"), cfg.HiddenSize, 1, true); err != nil {
		return nil, fmt.Errorf("bert: %w", err)
	}
	m.arch = archPreTraining
	return p, nil
}

// Forward maps a batch (B, T) to the replaced-token logits (B, T).
func (p *ElectraForPreTraining) Forward(g *layers.Graph, in Inputs) (*gorgonia.Node, error) {
	h, err := p.Hidden(g, in)
	if err != nil {
		return nil, err
	}
	return p.Logits(g, h)
}

// Logits maps hidden states (B, T, D) to the replaced-token logits (B, T).
func (p *ElectraForPreTraining) Logits(g *layers.Graph, h *gorgonia.Node) (*gorgonia.Node, error) {
	if h.Dims() != 3 {
		return nil, fmt.Errorf("bert: discriminator_predictions: hidden states %v must be (B, T, D)", h.Shape())
	}
	y, err := p.Dense.Forward(g, h)
	if err != nil {
		return nil, fmt.Errorf("bert: discriminator_predictions: %w", err)
	}
	if y, err = layers.Activate(y, p.act); err != nil {
		return nil, fmt.Errorf("bert: discriminator_predictions: %w", err)
	}
	if y, err = p.Prediction.Forward(g, y); err != nil {
		return nil, fmt.Errorf("bert: discriminator_predictions: %w", err)
	}
	if y, err = gorgonia.Reshape(y, []int{h.Shape()[0], h.Shape()[1]}); err != nil {
		return nil, fmt.Errorf("bert: discriminator_predictions: %w", err)
	}
	return y, nil
}

// BinaryCrossEntropy is the mean binary cross-entropy of logits (B, T)
// (float) against labels (B, T) int, 1 for replaced and 0 for original,
// skipping layers.IgnoreIndex (padding): transformers'
// BCEWithLogitsLoss over the tokens of the attention mask. It is the
// two-class cross-entropy of the scores (0, logit), softplus(x) − y·x,
// computed stably.
func BinaryCrossEntropy(g *layers.Graph, logits, labels *gorgonia.Node) (*gorgonia.Node, error) {
	if logits.Dims() != 2 || labels.Dims() != 2 || !logits.Shape().Eq(labels.Shape()) {
		return nil, fmt.Errorf("bert: binary cross-entropy: logits %v and labels %v must both be (B, T)", logits.Shape(), labels.Shape())
	}
	x, err := twoClass(g, logits)
	if err != nil {
		return nil, err
	}
	loss, err := layers.CrossEntropy(x, labels, layers.IgnoreIndex, 0)
	if err != nil {
		return nil, fmt.Errorf("bert: binary cross-entropy: %w", err)
	}
	return loss, nil
}

// Loss is ElectraForPreTraining's loss: BinaryCrossEntropy of the logits
// against labels (B, T) int (1 replaced, 0 original, layers.IgnoreIndex
// at the padding, which transformers leaves out by the attention mask).
// It returns the loss and the logits (B, T).
func (p *ElectraForPreTraining) Loss(g *layers.Graph, in Inputs, labels *gorgonia.Node) (loss, logits *gorgonia.Node, err error) {
	if logits, err = p.Forward(g, in); err != nil {
		return nil, nil, err
	}
	if loss, err = BinaryCrossEntropy(g, logits, labels); err != nil {
		return nil, nil, err
	}
	return loss, logits, nil
}

// LoadElectraForPreTraining reads an ELECTRA checkpoint into an
// ElectraForPreTraining (the discriminator); without models.Strict a
// checkpoint of another head loads, its discriminator_predictions created
// (see LoadReport).
func LoadElectraForPreTraining(dir string, opts ...models.LoadOption) (*ElectraForPreTraining, LoadReport, error) {
	return loadAs(dir, "LoadElectraForPreTraining", opts, func(c Config, s []layers.Option) (*ElectraForPreTraining, error) {
		return NewElectraForPreTraining(c, s...)
	})
}

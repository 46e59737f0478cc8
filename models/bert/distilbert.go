package bert

// DistilBERT (model_type "distilbert", Sanh et al. 2019) is BERT's
// computation under other names: DistilBertConfig's keys (dim, hidden_dim,
// n_layers, n_heads, activation, dropout, …), transformers'
// modeling_distilbert.py tensor names (distilbert.embeddings.*,
// distilbert.transformer.layer.N.attention.q_lin, sa_layer_norm,
// ffn.lin1/lin2, output_layer_norm), no token types, no pooler, every
// LayerNorm at eps 1e-12, and its own heads: vocab_transform →
// activation → vocab_layer_norm → vocab_projector (tied) for the masked
// LM, and pre_classifier → ReLU → dropout → classifier on the first token
// for sequence classification.

import (
	"encoding/json"

	"github.com/d73a19ff/zoo/models"
)

// DistilBertModelType is the model_type of a DistilBERT config.json, and
// the Config.ModelType that builds one.
const DistilBertModelType = "distilbert"

// distilLayerNormEps is the eps of every LayerNorm of transformers'
// DistilBERT (nn.LayerNorm(dim, eps=1e-12)); config.json has no key for it.
const distilLayerNormEps = 1e-12

// distilBlockNames are DistilBERT's names for the parts of a TransformerBlock.
var distilBlockNames = blockNamesOf("attention", "sa_layer_norm", "ffn.lin1", "ffn.lin2", "output_layer_norm", "q_lin", "k_lin", "v_lin", "out_lin")

var distilVariant = &variant{
	modelType: DistilBertModelType, configType: DistilBertModelType, name: "DistilBERT", family: "distilbert config", class: "DistilBert",
	prefix: "distilbert", encoder: "transformer", blocks: distilBlockNames,
	mlm: mlmNames{dense: "vocab_transform", norm: "vocab_layer_norm", bias: "vocab_projector.bias",
		decoderWeight: "vocab_projector.weight", decoderBias: "vocab_projector.bias"},
	noTokenTypes: true, noPooler: true,
	cls:       &clsHead{dense: "pre_classifier", out: "classifier", relu: true},
	wordPiece: true, mask: MaskToken, specials: [3]string{"[CLS]", "[SEP]", "[UNK]"},
	tokenizer: "a WordPiece tokenizer (BERT's, with the BertNormalizer and BertPreTokenizer)",
}

// distilConfig is a DistilBERT config.json under DistilBertConfig's names;
// distilCodec converts it to and from Config.
type distilConfig struct {
	VocabSize             int                        `json:"vocab_size"`
	MaxPositionEmbeddings int                        `json:"max_position_embeddings"`
	NLayers               int                        `json:"n_layers"`
	NHeads                int                        `json:"n_heads"`
	Dim                   int                        `json:"dim"`
	HiddenDim             int                        `json:"hidden_dim"`
	Dropout               float64                    `json:"dropout"`
	AttentionDropout      float64                    `json:"attention_dropout"`
	Activation            string                     `json:"activation"`
	InitializerRange      float64                    `json:"initializer_range"`
	QADropout             float64                    `json:"qa_dropout"`
	SeqClassifDropout     float64                    `json:"seq_classif_dropout"`
	PadTokenID            int                        `json:"pad_token_id"`
	SinusoidalPosEmbds    bool                       `json:"sinusoidal_pos_embds"`
	ID2Label              map[string]string          `json:"id2label,omitempty"`
	Extra                 map[string]json.RawMessage `json:"-"`
}

// distilDefaults are DistilBertConfig's defaults (distilbert-base-uncased's).
func distilDefaults() distilConfig {
	return distilConfig{VocabSize: 30522, MaxPositionEmbeddings: 512, NLayers: 6, NHeads: 12, Dim: 768, HiddenDim: 4 * 768,
		Dropout: 0.1, AttentionDropout: 0.1, Activation: "gelu", InitializerRange: 0.02, QADropout: 0.1, SeqClassifDropout: 0.2}
}

// distilRefused are DistilBERT's keys whose other values zoo does not
// compute, and BERT's refusals, which transformers' PretrainedConfig reads
// for DistilBERT too.
var distilRefused = append([]models.Refusal{
	{Key: "tie_weights_", OK: func(v any) bool { return v == nil || v == true },
		Why: "is not supported: zoo's DistilBERT ties vocab_projector to the word embeddings"},
}, refused...)

// distilCodecJSON reads and writes DistilBertConfig's keys, with its
// attribute_map's names (hidden_size, num_attention_heads,
// num_hidden_layers) read as aliases.
var distilCodecJSON = models.NewCodec(models.Descriptor[distilConfig]{
	Family: "distilbert config", ModelType: DistilBertModelType, Defaults: distilDefaults, Refused: distilRefused,
	Aliases: []models.Alias{{Alias: "hidden_size", Key: "dim"}, {Alias: "num_attention_heads", Key: "n_heads"}, {Alias: "num_hidden_layers", Key: "n_layers"}},
})

// distilCodec is distilCodecJSON on Config (configCodec).
var distilCodec = renamedCodec[distilConfig]{json: distilCodecJSON, to: toDistil, from: fromDistil}

func toDistil(c Config) distilConfig {
	return distilConfig{VocabSize: c.VocabSize, MaxPositionEmbeddings: c.MaxPositionEmbeddings, NLayers: c.NumHiddenLayers,
		NHeads: c.NumAttentionHeads, Dim: c.HiddenSize, HiddenDim: c.IntermediateSize, Dropout: c.HiddenDropoutProb,
		AttentionDropout: c.AttentionProbsDropoutProb, Activation: c.HiddenAct, InitializerRange: c.InitializerRange,
		QADropout: c.QADropout, SeqClassifDropout: c.SeqClassifDropout, PadTokenID: c.PadTokenID, SinusoidalPosEmbds: c.SinusoidalPosEmbds,
		ID2Label: c.ID2Label, Extra: c.Extra}
}

func fromDistil(d distilConfig) Config {
	return Config{ModelType: DistilBertModelType, VocabSize: d.VocabSize, HiddenSize: d.Dim, NumHiddenLayers: d.NLayers,
		NumAttentionHeads: d.NHeads, IntermediateSize: d.HiddenDim, HiddenAct: d.Activation, HiddenDropoutProb: d.Dropout,
		AttentionProbsDropoutProb: d.AttentionDropout, MaxPositionEmbeddings: d.MaxPositionEmbeddings, InitializerRange: d.InitializerRange,
		LayerNormEps: distilLayerNormEps, PadTokenID: d.PadTokenID, PositionEmbeddingType: "absolute",
		QADropout: d.QADropout, SeqClassifDropout: d.SeqClassifDropout, SinusoidalPosEmbds: d.SinusoidalPosEmbds, ID2Label: d.ID2Label, Extra: d.Extra}
}

// DistilBertBase is distilbert-base-uncased
// (https://huggingface.co/distilbert/distilbert-base-uncased/blob/main/config.json):
// 6 layers, 12 heads, 768 wide, 3072 inner, 30,522 tokens, 512 positions,
// no token types, no pooler: 66,362,880 parameters (DistilBertModel).
func DistilBertBase() Config { return fromDistil(distilDefaults()) }

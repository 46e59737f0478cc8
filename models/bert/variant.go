package bert

// The model types of the BERT family. A variant of BERT is data, not a
// copy of the model: its config.json codec and defaults, the names of its
// tensors, and the few parts that differ (RoBERTa's position ids and its
// classification head). Every Model, head, Load function and pipeline of
// this package serves every variant; Config.ModelType picks one.

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// RobertaModelType is the model_type of a RoBERTa config.json, and the
// Config.ModelType that builds one.
const RobertaModelType = "roberta"

// variant is what one model type of the BERT family changes.
type variant struct {
	modelType  string // config.json's model_type
	configType string // Config.ModelType for it ("" for BERT)
	name       string // in messages: "BERT", "RoBERTa"
	family     string // the config errors' prefix: "bert config"
	class      string // transformers' class prefix: "Bert" (BertForMaskedLM), "Roberta"
	prefix     string // the backbone's scope in a head's checkpoint: "bert", "roberta"
	encoder    string // the layer stack's scope under prefix: "encoder" (DistilBERT: "transformer")
	blocks     layers.BlockNames
	codec      configCodec
	mlm        mlmNames
	// paddedPositions: position ids start at padding_idx + 1 and count
	// only the non-pad tokens (transformers'
	// create_position_ids_from_input_ids), so at most
	// max_position_embeddings − padding_idx − 1 tokens fit.
	paddedPositions bool
	// cls, when set, is the sequence classifier on the first token's
	// hidden state, on a backbone without a pooler: RoBERTa's
	// RobertaClassificationHead or DistilBERT's pre_classifier; nil is
	// BERT's linear classifier on the pooled output.
	cls *clsHead
	// noTokenTypes: the model has no token_type_embeddings (DistilBERT),
	// and token type ids given to it are an error.
	noTokenTypes bool
	// noPooler: no model of the type has a pooler (DistilBERT).
	noPooler bool
	// mlmPooler: ForMaskedLM keeps the pooler (zoo's BERT does, so that
	// its checkpoints load into every head; RoBERTa's follows
	// transformers' add_pooling_layer=False).
	mlmPooler bool
	// mask is the mask token the fill-mask pipeline looks for.
	mask string
	// specials are the tokenizer's [CLS], [SEP] and [UNK] (<s>, </s>,
	// <unk>), and tokenizer what the pipelines take, for errors.
	specials  [3]string
	tokenizer string
	wordPiece bool // the pipelines take a WordPiece only (BERT's, DistilBERT's)
	// pooler is the pooler's scope under prefix, "" for "pooler.dense"
	// (ALBERT's is "pooler").
	pooler string
	// pair is ForPreTraining's sentence-pair head on the pooled output:
	// BERT's next-sentence prediction, ALBERT's sentence-order
	// prediction (after dropout); "" for a type without ForPreTraining.
	pair string
}

// mlmNames are the tensor names of the masked-LM head and whether its
// activation is hidden_act or always GELU (RobertaLMHead calls gelu).
type mlmNames struct {
	dense, norm, bias          string // the transform, its LayerNorm, the decoder's own bias
	decoderWeight, decoderBias string // the tied decoder's keys in a file
	gelu                       bool
}

// clsHead is a sequence classifier on the first token: dense → tanh →
// out (RobertaClassificationHead: dropout before dense and before out), or
// dense → ReLU → out (DistilBERT: dropout before out only).
type clsHead struct {
	dense, out string // the two linears' names: "classifier.dense", "classifier.out_proj"
	relu       bool   // DistilBERT's pre_classifier → ReLU, without the first dropout
	// act, when set, replaces tanh (ElectraClassificationHead: "gelu").
	act string
}

// configCodec reads and writes a model type's config.json into Config
// (a *models.Codec[Config], or a renamedCodec, which renames the keys).
type configCodec interface {
	Unmarshal(b []byte, c *Config) error
	UnmarshalStrict(b []byte, c *Config, what string) error
	Marshal(c Config, arch string) ([]byte, error)
	Saved(c Config, arch string) json.Marshaler
	CheckExtra(c Config) error
}

// blockNamesOf are a layer's names: the attention scope, its norm, the
// feed-forward's two linears, the final norm, and the four projections.
func blockNamesOf(attn, attnNorm, ffnIn, ffnOut, final, q, k, v, o string) layers.BlockNames {
	return layers.BlockNames{SelfAttn: attn, SelfAttnNorm: attnNorm, FFNIn: ffnIn, FFNOut: ffnOut, FinalNorm: final,
		Attention: layers.AttentionNames{Query: q, Key: k, Value: v, Out: o}, Layers: "layer"}
}

var bertVariant = &variant{
	modelType: ModelType, name: "BERT", family: "bert config", class: "Bert", prefix: "bert", encoder: "encoder", blocks: blockNames,
	mlm: mlmNames{dense: "cls.predictions.transform.dense", norm: "cls.predictions.transform.LayerNorm", bias: "cls.predictions.bias",
		decoderWeight: "cls.predictions.decoder.weight", decoderBias: "cls.predictions.decoder.bias"},
	mlmPooler: true, wordPiece: true, mask: MaskToken, specials: [3]string{"[CLS]", "[SEP]", "[UNK]"}, pair: "cls.seq_relationship",
	tokenizer: "a WordPiece tokenizer (BERT's, with the BertNormalizer and BertPreTokenizer)",
}

var robertaVariant = &variant{
	modelType: RobertaModelType, configType: RobertaModelType, name: "RoBERTa", family: "roberta config", class: "Roberta", prefix: "roberta", encoder: "encoder", blocks: blockNames,
	mlm: mlmNames{dense: "lm_head.dense", norm: "lm_head.layer_norm", bias: "lm_head.bias",
		decoderWeight: "lm_head.decoder.weight", decoderBias: "lm_head.decoder.bias", gelu: true},
	paddedPositions: true, cls: &clsHead{dense: "classifier.dense", out: "classifier.out_proj"}, mask: RobertaMaskToken, specials: [3]string{"<s>", "</s>", "<unk>"},
	tokenizer: "RoBERTa's byte-level BPE tokenizer with its RobertaProcessing post-processor",
}

func init() {
	bertVariant.codec = codec
	robertaVariant.codec = robertaCodec
	distilVariant.codec = distilCodec
	albertVariant.codec = albertCodec
	electraVariant.codec = electraCodec
}

// variantOf is c's model type.
func (c Config) variantOf() (*variant, error) {
	switch c.ModelType {
	case "", ModelType:
		return bertVariant, nil
	case RobertaModelType:
		return robertaVariant, nil
	case DistilBertModelType:
		return distilVariant, nil
	case AlbertModelType:
		return albertVariant, nil
	case ElectraModelType:
		return electraVariant, nil
	}
	return nil, fmt.Errorf("bert config: model type %q is not one of the BERT family's (%q, %q, %q, %q, %q)", c.ModelType, ModelType, RobertaModelType, DistilBertModelType, AlbertModelType, ElectraModelType)
}

// variant is variantOf for a validated config (New validates).
func (c Config) variant() *variant {
	v, err := c.variantOf()
	if err != nil {
		return bertVariant
	}
	return v
}

// variantOfJSON is the model type a config.json's model_type names; a
// config.json without one is read as the type of the Config it is read
// into.
func variantOfJSON(b []byte, current string) (*variant, error) {
	var head struct {
		ModelType *string `json:"model_type"`
	}
	if err := json.Unmarshal(b, &head); err != nil || head.ModelType == nil {
		return Config{ModelType: current}.variantOf() // a syntax error is the codec's to report
	}
	switch *head.ModelType {
	case ModelType:
		return bertVariant, nil
	case RobertaModelType:
		return robertaVariant, nil
	case DistilBertModelType:
		return distilVariant, nil
	case AlbertModelType:
		return albertVariant, nil
	case ElectraModelType:
		return electraVariant, nil
	}
	return nil, fmt.Errorf("bert config: model_type %q is not %s, %s, %s, %s or %s (the BERT family's model types)", *head.ModelType, ModelType, RobertaModelType, DistilBertModelType, AlbertModelType, ElectraModelType)
}

// distilKeys are DistilBertConfig's names for BertConfig's keys.
var distilKeys = map[string]string{"hidden_size": "dim", "num_hidden_layers": "n_layers", "num_attention_heads": "n_heads",
	"intermediate_size": "hidden_dim", "hidden_act": "activation", "hidden_dropout_prob": "dropout",
	"attention_probs_dropout_prob": "attention_dropout"}

// key is the variant's config.json name for BertConfig's key k, for errors.
func (v *variant) key(k string) string {
	if n, ok := distilKeys[k]; ok && v == distilVariant {
		return n
	}
	if k == "classifier_dropout" && v == albertVariant {
		return "classifier_dropout_prob"
	}
	return k
}

// arch is transformers' class of the variant for BERT's class name
// bertArch: RobertaForMaskedLM for BertForMaskedLM.
func (v *variant) arch(bertArch string) string { return v.class + strings.TrimPrefix(bertArch, "Bert") }

// scope is the store scope of a dotted parameter prefix.
func scope(s *layers.Store, dotted string) layers.Scope {
	sc := s.Root()
	for _, p := range strings.Split(dotted, ".") {
		sc = sc.Sub(p)
	}
	return sc
}

// robertaDefaults are RobertaConfig's defaults: BertConfig's, with
// pad_token_id 1 (and bos_token_id 0, eos_token_id 2, which Save writes).
func robertaDefaults() Config {
	c := defaults()
	c.ModelType = RobertaModelType
	c.VocabSize = 50265
	c.PadTokenID = 1
	return c
}

// robertaCodec reads and writes RoBERTa's config.json: BERT's keys, and
// RobertaConfig's bos_token_id 0 and eos_token_id 2, kept (RoBERTa's
// tokenizer puts <s> and </s> itself) and written when a config lacks
// them, as RobertaConfig.save_pretrained writes them.
var robertaCodec = models.NewCodec(models.Descriptor[Config]{
	Family: "roberta config", ModelType: RobertaModelType, Defaults: robertaDefaults, Refused: refused,
	Inert: func(Config) map[string]any { return map[string]any{"bos_token_id": 0, "eos_token_id": 2} },
})

// RobertaBase is roberta-base
// (https://huggingface.co/FacebookAI/roberta-base/blob/main/config.json):
// 12 layers, 12 heads, 768 wide, 3072 inner, 50,265 tokens, 514 positions
// (512 tokens: positions start at pad_token_id 1 + 1), one token type,
// LayerNorm eps 1e-5: 124,645,632 parameters (RobertaModel with its
// pooler).
func RobertaBase() Config {
	c := robertaDefaults()
	c.MaxPositionEmbeddings = 514
	c.TypeVocabSize = 1
	c.LayerNormEps = 1e-5
	return c
}

// MaxTokens is the longest input the model takes: max_position_embeddings
// for BERT; for RoBERTa, whose positions start at padding_idx + 1,
// max_position_embeddings − pad_token_id − 1 (512 for roberta-base).
func (c Config) MaxTokens() int {
	if c.variant().paddedPositions {
		return c.MaxPositionEmbeddings - c.PadTokenID - 1
	}
	return c.MaxPositionEmbeddings
}

// Package bert is BERT (Devlin et al. 2019), a post-norm Transformer
// encoder with word, position and token-type embeddings and a [CLS]
// pooler, built from the zoo's shared layers, with Hugging Face's
// parameter names and checkpoint layout, its pretraining heads (masked LM
// and next-sentence prediction) and a sequence classifier; and Hugging
// Face's pipelines as one call each: LoadTextClassification,
// LoadTokenClassification, LoadQuestionAnswering, LoadFillMask and
// LoadFeatureExtraction, then Predict on strings.
//
// RoBERTa (model_type "roberta") is a model type of this package, not a
// package of its own: a Config with ModelType RobertaModelType (RobertaBase,
// or a RoBERTa config.json) builds it, and every constructor, loader, Save
// and pipeline serves it with transformers' RobertaFor… names: positions
// from pad_token_id + 1, RobertaLMHead, RobertaClassificationHead, no
// pooler in its heads, and its byte-level BPE tokenizer (see variant.go).
// DistilBERT (model_type "distilbert", DistilBertBase) is one too, with
// DistilBertConfig's keys and transformers' DistilBertFor… names: no token
// types, no pooler, pre_classifier → ReLU → classifier (see distilbert.go).
// ALBERT (model_type "albert", AlbertBase) is one too, with AlbertConfig's
// keys and transformers' AlbertFor… names: factorised embeddings and
// layers shared by groups (see albert.go).
// ELECTRA (model_type "electra", ElectraSmall) is one too: embeddings at
// embedding_size projected to hidden_size, no pooler, the discriminator
// (ElectraForPreTraining), the generator (ForMaskedLM) and
// ElectraClassificationHead (see electra.go).
package bert

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// Config describes a BERT. Its JSON field names are those of Hugging
// Face's BertConfig, so a BERT config.json decodes into it directly: see
// https://github.com/huggingface/transformers/blob/main/src/transformers/models/bert/configuration_bert.py
// and the PretrainedConfig it extends (configuration_utils.py).
//
// Every key of such a config.json is, when read (UnmarshalJSON), one of:
//
//   - computed: a field below;
//   - refused: a value that makes transformers compute something this model
//     does not (is_decoder or add_cross_attention true, a non-empty
//     pruned_heads, chunk_size_feed_forward other than 0,
//     tie_word_embeddings false, a problem_type other than
//     single_label_classification) is an error naming the key; so is a
//     position_embedding_type other than "absolute" (Validate);
//   - kept: every other key (use_cache, torch_dtype, gradient_checkpointing,
//     transformers_version, …) goes to Extra, and Save writes it back.
//
// model_type must be "bert", "roberta", "distilbert", "albert" or "electra"
// (ModelType; a DistilBERT's keys are DistilBertConfig's, see QADropout, an
// ALBERT's AlbertConfig's and an ELECTRA's add embedding_size, see
// EmbeddingSize); architectures and
// label2id are written from what Save saves, not kept.
type Config struct {
	// ModelType is the model type of the BERT family this config builds:
	// "" (or "bert") for BERT, RobertaModelType for RoBERTa (see
	// RobertaBase), DistilBertModelType for DistilBERT (DistilBertBase). It is config.json's model_type, read and written by
	// UnmarshalJSON and MarshalJSON, which pick the type's codec by it.
	ModelType                 string  `json:"-"`
	VocabSize                 int     `json:"vocab_size"`
	HiddenSize                int     `json:"hidden_size"`
	NumHiddenLayers           int     `json:"num_hidden_layers"`
	NumAttentionHeads         int     `json:"num_attention_heads"`
	IntermediateSize          int     `json:"intermediate_size"`
	HiddenAct                 string  `json:"hidden_act"`
	HiddenDropoutProb         float64 `json:"hidden_dropout_prob"`
	AttentionProbsDropoutProb float64 `json:"attention_probs_dropout_prob"`
	MaxPositionEmbeddings     int     `json:"max_position_embeddings"`
	TypeVocabSize             int     `json:"type_vocab_size"`
	InitializerRange          float64 `json:"initializer_range"`
	LayerNormEps              float64 `json:"layer_norm_eps"`
	// PadTokenID fills padding; its word-embedding row starts at zero, as
	// torch.nn.Embedding's padding_idx.
	PadTokenID int `json:"pad_token_id"`
	// PositionEmbeddingType must be "absolute" (learned positions).
	PositionEmbeddingType string `json:"position_embedding_type"`
	// ClassifierDropout is the dropout before the classifier; nil (null)
	// means hidden_dropout_prob, as transformers reads it.
	ClassifierDropout *float64 `json:"classifier_dropout"`
	// QADropout and SeqClassifDropout are DistilBERT's (ModelType
	// DistilBertModelType) qa_dropout, before qa_outputs, and
	// seq_classif_dropout, before its classifier; BERT's and RoBERTa's
	// heads do not read them. (A DistilBERT's other keys are read into the
	// fields above: dim is HiddenSize, hidden_dim IntermediateSize,
	// n_layers NumHiddenLayers, n_heads NumAttentionHeads, activation
	// HiddenAct, dropout HiddenDropoutProb, attention_dropout
	// AttentionProbsDropoutProb; it has no token types, TypeVocabSize 0,
	// and LayerNormEps is 1e-12.)
	QADropout         float64 `json:"-"`
	SeqClassifDropout float64 `json:"-"`
	// SinusoidalPosEmbds is DistilBERT's sinusoidal_pos_embds: the
	// position table is create_sinusoidal_embeddings' fixed one, which New
	// writes into position_embeddings.weight and training never changes
	// (distilbert_sinusoidal.go). Other model types refuse it.
	SinusoidalPosEmbds bool `json:"-"`
	// EmbeddingSize is ALBERT's and ELECTRA's embedding_size: the
	// embeddings' width, projected to HiddenSize by Model.EmbeddingsProject
	// (ALBERT: always; ELECTRA: when the two differ); 0 means HiddenSize,
	// and the other model types must leave it 0.
	EmbeddingSize int `json:"-"`
	// NumHiddenGroups and InnerGroupNum are ALBERT's (ModelType
	// AlbertModelType) num_hidden_groups and inner_group_num (see
	// albert.go): the layer groups whose weights the NumHiddenLayers layers
	// share. Every other model type leaves them 0. (An ALBERT's
	// classifier_dropout_prob is read into ClassifierDropout.)
	NumHiddenGroups int `json:"-"`
	InnerGroupNum   int `json:"-"`
	// ID2Label names the classes of a sequence classifier, by id ("0", "1", …).
	ID2Label map[string]string `json:"id2label,omitempty"`
	// Extra holds the config.json keys this Config does not model, as read
	// (see above); Save writes them back.
	Extra map[string]json.RawMessage `json:"-"`
}

// defaults are BertConfig's defaults, which are bert-base-uncased's.
func defaults() Config {
	return Config{
		VocabSize: 30522, HiddenSize: 768, NumHiddenLayers: 12, NumAttentionHeads: 12,
		IntermediateSize: 3072, HiddenAct: "gelu", HiddenDropoutProb: 0.1,
		AttentionProbsDropoutProb: 0.1, MaxPositionEmbeddings: 512, TypeVocabSize: 2,
		InitializerRange: 0.02, LayerNormEps: 1e-12, PositionEmbeddingType: "absolute",
	}
}

// Base is bert-base-uncased
// (https://huggingface.co/google-bert/bert-base-uncased/blob/main/config.json):
// 12 layers, 12 heads, 768 wide, 3072 inner, 30,522 tokens, 512 positions,
// 2 token types: 109,482,240 parameters (BertModel with its pooler).
func Base() Config { return defaults() }

// sized is Base with L layers, width H, A heads and inner width I: the
// shapes of Google's 24 smaller BERTs (Turc et al. 2019,
// https://github.com/google-research/bert#bert).
func sized(l, h, a, i int) Config {
	c := defaults()
	c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.IntermediateSize = l, h, a, i
	return c
}

// Tiny is BERT-Tiny (L2/H128/A2/I512): 4,385,920 parameters.
func Tiny() Config { return sized(2, 128, 2, 512) }

// Mini is BERT-Mini (L4/H256/A4/I1024): 11,170,560 parameters.
func Mini() Config { return sized(4, 256, 4, 1024) }

// Small is BERT-Small (L4/H512/A8/I2048): 28,763,648 parameters.
func Small() Config { return sized(4, 512, 8, 2048) }

// Medium is BERT-Medium (L8/H512/A8/I2048): 41,373,184 parameters.
func Medium() Config { return sized(8, 512, 8, 2048) }

// Validate reports a configuration that cannot be built, or that is
// absurd: each size at most models.MaxDim (num_hidden_layers
// models.MaxLayers, the labels models.MaxLabels), and a parameter count
// that fits int. Whether the model fits the machine's memory is New's
// check (models.CheckParams).
func (c Config) Validate() error {
	v, err := c.variantOf()
	if err != nil {
		return err
	}
	k := v.key
	sizes := []models.Size{
		{Field: "vocab_size", V: c.VocabSize, Max: models.MaxDim},
		{Field: k("hidden_size"), V: c.HiddenSize, Max: models.MaxDim},
		{Field: k("num_hidden_layers"), V: c.NumHiddenLayers, Max: models.MaxLayers},
		{Field: k("num_attention_heads"), V: c.NumAttentionHeads, Max: models.MaxDim},
		{Field: k("intermediate_size"), V: c.IntermediateSize, Max: models.MaxDim},
		{Field: "max_position_embeddings", V: c.MaxPositionEmbeddings, Max: models.MaxDim},
	}
	if v == electraVariant {
		sizes = append(sizes, models.Size{Field: "embedding_size", V: c.embeddingSize(), Max: models.MaxDim})
	} else if v != albertVariant && c.EmbeddingSize != 0 {
		return fmt.Errorf("%s: embedding_size %d: only an ALBERT or an ELECTRA (model_type %q, %q) has an embedding_size of its own (embeddings narrower than %s %d); leave it 0", v.family, c.EmbeddingSize, AlbertModelType, ElectraModelType, k("hidden_size"), c.HiddenSize)
	}
	if v.noTokenTypes {
		if c.TypeVocabSize != 0 {
			return fmt.Errorf("%s: type_vocab_size %d: a %s has no token types; leave it 0", v.family, c.TypeVocabSize, v.name)
		}
	} else {
		sizes = append(sizes, models.Size{Field: "type_vocab_size", V: c.TypeVocabSize, Max: models.MaxDim})
	}
	if err := models.CheckSizes(v.family, sizes...); err != nil {
		return err
	}
	if err := c.validateShared(v); err != nil {
		return err
	}
	switch {
	case c.HiddenSize%c.NumAttentionHeads != 0:
		return fmt.Errorf("%s: %s %d is not divisible by %s %d", v.family, k("hidden_size"), c.HiddenSize, k("num_attention_heads"), c.NumAttentionHeads)
	case len(c.ID2Label) > models.MaxLabels:
		return fmt.Errorf("bert config: id2label has %d labels, more than %d", len(c.ID2Label), models.MaxLabels)
	case !(c.LayerNormEps > 0):
		return fmt.Errorf("bert config: layer_norm_eps %g must be positive", c.LayerNormEps)
	case !(c.InitializerRange >= 0):
		return fmt.Errorf("bert config: initializer_range %g must not be negative", c.InitializerRange)
	case c.PadTokenID < 0 || c.PadTokenID >= c.VocabSize:
		return fmt.Errorf("bert config: pad_token_id %d is outside the vocabulary of %d", c.PadTokenID, c.VocabSize)
	case c.PositionEmbeddingType != "absolute":
		return fmt.Errorf("bert config: position_embedding_type %q is not supported: zoo's BERT has learned absolute positions only", c.PositionEmbeddingType)
	}
	if c.SinusoidalPosEmbds && v != distilVariant {
		return fmt.Errorf("%s: sinusoidal position embeddings are DistilBERT's (sinusoidal_pos_embds); a %s has learned positions", v.family, v.name)
	}
	if v.paddedPositions && c.MaxPositionEmbeddings-c.PadTokenID-1 < 1 {
		return fmt.Errorf("%s: max_position_embeddings %d leaves no position after padding_idx (pad_token_id) %d: %s's positions start at padding_idx + 1; use at least %d",
			v.family, c.MaxPositionEmbeddings, c.PadTokenID, v.name, c.PadTokenID+2)
	}
	ps := []struct {
		name string
		v    float64
	}{{k("hidden_dropout_prob"), c.HiddenDropoutProb}, {k("attention_probs_dropout_prob"), c.AttentionProbsDropoutProb},
		{"qa_dropout", c.QADropout}, {"seq_classif_dropout", c.SeqClassifDropout}}
	if c.ClassifierDropout != nil {
		ps = append(ps, struct {
			name string
			v    float64
		}{k("classifier_dropout"), *c.ClassifierDropout})
	}
	for _, p := range ps {
		if !(p.v >= 0 && p.v < 1) {
			return fmt.Errorf("%s: %s %g must be in [0, 1)", v.family, p.name, p.v)
		}
	}
	if _, err := layers.ParseActivation(c.HiddenAct); err != nil {
		return fmt.Errorf("%s: %s: %w", v.family, k("hidden_act"), err)
	}
	if n := c.NumParams(); n == math.MaxInt64 || n > math.MaxInt {
		big := c.paramTerms()[0]
		for _, t := range c.paramTerms() {
			if t.N > big.N {
				big = t
			}
		}
		return fmt.Errorf("bert config: the parameter count overflows int: %s; lower %s", big.What, big.Lower)
	}
	return c.checkExtra()
}

// NumParams is the number of learnable scalars New allocates for c (the
// backbone, BertModel with its pooler), computed without allocating
// (math.MaxInt64 if it overflows): embeddings (V + P + types)·d plus their
// LayerNorm 2d; per layer 4d² + 2d·I + 9d + I (query, key, value and
// attention output d² + d each, intermediate d·I + I, output I·d + d, two
// LayerNorms 2d each); the pooler d² + d. The heads add their own (see
// NewForPreTraining, NewForSequenceClassification).
func (c Config) NumParams() int64 {
	var n int64
	for _, t := range c.paramTerms() {
		n = models.Sum(n, t.N)
	}
	return n
}

func (c Config) paramTerms() []models.Term {
	v, p, ty, d, l, in := int64(c.VocabSize), int64(c.MaxPositionEmbeddings), int64(c.TypeVocabSize),
		int64(c.HiddenSize), int64(c.NumHiddenLayers), int64(c.IntermediateSize)
	perLayer := models.Sum(models.Mul(4, d, d), models.Mul(2, d, in), models.Mul(9, d), in)
	switch c.variant() {
	case electraVariant:
		return c.electraParamTerms(perLayer)
	case albertVariant:
		return c.albertParamTerms(perLayer)
	}
	terms := []models.Term{
		{What: fmt.Sprintf("word_embeddings, vocab_size %d × hidden_size %d", v, d), Lower: "vocab_size", N: models.Mul(v, d)},
		{What: fmt.Sprintf("position_embeddings, max_position_embeddings %d × hidden_size %d", p, d), Lower: "max_position_embeddings", N: models.Mul(p, d)},
		{What: fmt.Sprintf("token_type_embeddings, type_vocab_size %d × hidden_size %d", ty, d), Lower: "type_vocab_size", N: models.Mul(ty, d)},
		{What: fmt.Sprintf("the layers, num_hidden_layers %d × %s per layer (hidden_size %d, intermediate_size %d)", l, models.Count(perLayer), d, in),
			Lower: "num_hidden_layers, hidden_size or intermediate_size", N: models.Mul(l, perLayer)},
		{What: "the embedding LayerNorm and the pooler", Lower: "hidden_size", N: models.Sum(models.Mul(d, d), models.Mul(3, d))},
	}
	if c.variant().noPooler { // DistilBERT: no pooler (and no token types: ty is 0)
		terms[len(terms)-1] = models.Term{What: "the embedding LayerNorm", Lower: c.variant().key("hidden_size"), N: models.Mul(2, d)}
	}
	return terms
}

// refused are the config.json keys whose values, other than their
// defaults, make transformers' BERT compute what this model does not.
var refused = []models.Refusal{
	{Key: "is_decoder", OK: func(v any) bool { return v == nil || v == false },
		Why: "is not supported: zoo's BERT is a bidirectional encoder, without the causal mask of a decoder"},
	{Key: "add_cross_attention", OK: func(v any) bool { return v == nil || v == false },
		Why: "is not supported: zoo's BERT has no cross-attention layers (crossattention.*)"},
	{Key: "pruned_heads", OK: func(v any) bool { m, ok := v.(map[string]any); return v == nil || ok && len(m) == 0 },
		Why: "is not supported: zoo's BERT has num_attention_heads heads in every layer; use an unpruned checkpoint"},
	{Key: "chunk_size_feed_forward", OK: func(v any) bool { return v == nil || v == 0.0 },
		Why: "is not supported: zoo's BERT runs the feed-forward on the whole sequence (chunk_size_feed_forward 0)"},
	{Key: "tie_word_embeddings", OK: func(v any) bool { return v == nil || v == true },
		Why: "is not supported: zoo's BERT ties the MLM decoder to the word embeddings"},
	{Key: "problem_type", OK: func(v any) bool { return v == nil || v == "single_label_classification" },
		Why: "is not supported: zoo's BERT classifier trains with softmax cross-entropy (single_label_classification)"},
}

// codec reads and writes BERT's config.json (see Config).
var codec = models.NewCodec(models.Descriptor[Config]{
	Family: "bert config", ModelType: ModelType, Defaults: defaults, Refused: refused,
})

// checkExtra rejects Extra keys that Config models and refused values.
func (c Config) checkExtra() error {
	v, err := c.variantOf()
	if err != nil {
		return err
	}
	return v.codec.CheckExtra(c)
}

// The architectures Save writes: transformers' class for the layout.
const (
	archModel       = "BertModel"
	archPreTraining = "BertForPreTraining"
	archMaskedLM    = "BertForMaskedLM"
	archClassifier  = "BertForSequenceClassification"
	// The optional task heads (tasks.go).
	archTokenClassifier = "BertForTokenClassification"
	archQA              = "BertForQuestionAnswering"
)

// Labels are the class names of id2label by id: its keys must be "0" to
// "n-1", each once. A config without id2label has none (nil).
func (c Config) Labels() ([]string, error) { return models.Labels(c.ID2Label, "bert config") }

// classifierDropout is the dropout before a classifier head:
// classifier_dropout, or hidden_dropout_prob when it is null.
func (c Config) classifierDropout() float64 {
	if c.ClassifierDropout != nil {
		return *c.ClassifierDropout
	}
	return c.HiddenDropoutProb
}

// MarshalJSON writes a Hugging Face BERT config.json: the fields,
// model_type, architectures (BertForSequenceClassification with id2label,
// else BertModel; Save writes the head it saves) and label2id, then the
// Extra keys in name order.
func (c Config) MarshalJSON() ([]byte, error) {
	v, err := c.variantOf()
	if err != nil {
		return nil, err
	}
	arch := archModel
	if len(c.ID2Label) > 0 {
		arch = archClassifier
	}
	return v.codec.Marshal(c, v.arch(arch))
}

// Strict returns c as the decoder of a pipeline config file's "model"
// section (zoo pretrain bert --config): UnmarshalJSON, but a key that is
// not one of Config's fields (or model_type) is an error, so that a typo
// such as hidden_sise is refused rather than kept in Extra and written
// into config.json. A checkpoint's config.json, which carries
// transformers' other keys, is read by Config.UnmarshalJSON instead.
func Strict(c *Config) json.Unmarshaler { return &strictConfig{c} }

type strictConfig struct{ c *Config }

func (s *strictConfig) UnmarshalJSON(b []byte) error {
	v, err := variantOfJSON(b, s.c.ModelType)
	if err != nil {
		return err
	}
	if err := v.codec.UnmarshalStrict(b, s.c, "a "+v.name+" model section"); err != nil {
		return err
	}
	s.c.ModelType = v.configType
	return nil
}

// UnmarshalJSON reads a config.json as the Config doc describes, as the
// model type its model_type names (absent: c's ModelType). Fields it
// leaves out keep their values when c is already set, as encoding/json
// does, and otherwise take the type's defaults (BertConfig's or
// RobertaConfig's).
func (c *Config) UnmarshalJSON(b []byte) error {
	v, err := variantOfJSON(b, c.ModelType)
	if err != nil {
		return err
	}
	if err := v.codec.Unmarshal(b, c); err != nil {
		return err
	}
	c.ModelType = v.configType
	return nil
}

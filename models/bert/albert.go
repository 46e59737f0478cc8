package bert

// ALBERT (model_type "albert", Lan et al. 2019,
// https://arxiv.org/abs/1909.11942) is BERT with two parts changed and
// transformers' modeling_albert.py names:
//
//   - factorised embeddings: word, position and token-type tables of
//     embedding_size (E), their LayerNorm at E, then
//     albert.encoder.embedding_hidden_mapping_in, a Linear E → hidden_size
//     (Model.EmbeddingsProject);
//   - shared layers: num_hidden_groups groups of inner_group_num post-norm
//     layers, albert.encoder.albert_layer_groups.G.albert_layers.I.*
//     (attention.query/key/value/dense/LayerNorm, ffn, ffn_output,
//     full_layer_layer_norm); layer l of num_hidden_layers runs group
//     l / (num_hidden_layers / num_hidden_groups), each of its layers in
//     turn. Model.Encoder lists every use of a shared block, so the graph
//     holds one node per parameter and its gradient sums over every use.
//
// Its pooler is albert.pooler (Linear + tanh), its masked LM AlbertMLMHead
// (predictions.dense H → E, hidden_act, predictions.LayerNorm at E, the
// decoder tied to the word embeddings, predictions.bias), and its
// pretraining head sentence-order prediction, sop_classifier.classifier
// after dropout (classifier_dropout_prob) on the pooled output. The
// classifiers are BERT's (dropout classifier_dropout_prob, then
// classifier), and so are the token classifier and qa_outputs, which have
// no pooler, as transformers builds them.
//
// One difference in training only: transformers' AlbertLayer has no
// dropout after ffn_output (its self.dropout is unused), while zoo's
// block drops hidden_dropout_prob there as BERT's does. ALBERT's default
// hidden_dropout_prob is 0, and inference is the same either way.

import (
	"encoding/json"
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// AlbertModelType is the model_type of an ALBERT config.json, and the
// Config.ModelType that builds one.
const AlbertModelType = "albert"

// albertBlockNames are AlbertLayer's names for the parts of a block.
var albertBlockNames = blockNamesOf("attention", "attention.LayerNorm", "ffn", "ffn_output", "full_layer_layer_norm",
	"query", "key", "value", "dense")

var albertVariant = &variant{
	modelType: AlbertModelType, configType: AlbertModelType, name: "ALBERT", family: "albert config", class: "Albert",
	prefix: "albert", encoder: "encoder", blocks: albertBlockNames,
	mlm: mlmNames{dense: "predictions.dense", norm: "predictions.LayerNorm", bias: "predictions.bias",
		decoderWeight: "predictions.decoder.weight", decoderBias: "predictions.decoder.bias"},
	pooler: "pooler", pair: "sop_classifier.classifier",
	mask: MaskToken, specials: [3]string{"[CLS]", "[SEP]", "<unk>"},
	tokenizer: "ALBERT's Unigram tokenizer (SentencePiece) with its [CLS] $A [SEP] template",
}

// validateShared checks ALBERT's keys: embedding_size, num_hidden_groups
// and inner_group_num positive and bounded, num_hidden_layers a multiple
// of num_hidden_groups (transformers would otherwise split the layers
// unevenly); every other model type must leave the groups 0 (Validate
// checks embedding_size, ALBERT's and ELECTRA's alone).
func (c Config) validateShared(v *variant) error {
	if v != albertVariant {
		if c.NumHiddenGroups != 0 || c.InnerGroupNum != 0 {
			return fmt.Errorf("%s: num_hidden_groups %d, inner_group_num %d are ALBERT's; leave them 0 for a %s (or set model_type %q)",
				v.family, c.NumHiddenGroups, c.InnerGroupNum, v.name, AlbertModelType)
		}
		return nil
	}
	if err := models.CheckSizes(v.family,
		models.Size{Field: "embedding_size", V: c.EmbeddingSize, Max: models.MaxDim},
		models.Size{Field: "num_hidden_groups", V: c.NumHiddenGroups, Max: models.MaxLayers},
		models.Size{Field: "inner_group_num", V: c.InnerGroupNum, Max: models.MaxLayers}); err != nil {
		return err
	}
	if c.NumHiddenLayers%c.NumHiddenGroups != 0 {
		return fmt.Errorf("%s: num_hidden_layers %d is not a multiple of num_hidden_groups %d: each group must serve the same number of layers; use a num_hidden_groups that divides num_hidden_layers",
			v.family, c.NumHiddenLayers, c.NumHiddenGroups)
	}
	if n := models.Mul(int64(c.NumHiddenLayers), int64(c.InnerGroupNum)); n > models.MaxLayers {
		return fmt.Errorf("%s: num_hidden_layers %d × inner_group_num %d runs %d blocks, more than %d; lower one of them",
			v.family, c.NumHiddenLayers, c.InnerGroupNum, n, models.MaxLayers)
	}
	return nil
}

// albertParamTerms are NumParams' terms for an ALBERT: the embeddings
// (V + P + types)·E plus their LayerNorm 2E; the mapping E·d + d; per
// distinct layer (num_hidden_groups × inner_group_num of them)
// perLayer (4d² + 2d·I + 9d + I); the pooler d² + d.
func (c Config) albertParamTerms(perLayer int64) []models.Term {
	e, d, in := int64(c.EmbeddingSize), int64(c.HiddenSize), int64(c.IntermediateSize)
	blocks := models.Mul(int64(c.NumHiddenGroups), int64(c.InnerGroupNum))
	return append(c.embeddingTerms(e), []models.Term{
		{What: fmt.Sprintf("embedding_hidden_mapping_in, embedding_size %d × hidden_size %d", e, d), Lower: "embedding_size", N: models.Sum(models.Mul(e, d), d, models.Mul(2, e))},
		{What: fmt.Sprintf("the shared layers, num_hidden_groups %d × inner_group_num %d × %s per layer (hidden_size %d, intermediate_size %d)",
			c.NumHiddenGroups, c.InnerGroupNum, models.Count(perLayer), d, in),
			Lower: "num_hidden_groups, inner_group_num, hidden_size or intermediate_size", N: models.Mul(blocks, perLayer)},
		{What: "the pooler", Lower: "hidden_size", N: models.Sum(models.Mul(d, d), d)},
	}...)
}

// newAlbertEncoder builds an ALBERT's embedding_hidden_mapping_in and its
// layer groups in s (albert.encoder), and m.Encoder as the sequence of
// blocks its num_hidden_layers layers run: layer l runs group
// l / (num_hidden_layers / num_hidden_groups), that group's
// inner_group_num blocks in order. The same *layers.EncoderBlock appears
// once per use, so a graph reads each shared parameter through one node
// and its gradient accumulates over every use.
func (m *Model) newAlbertEncoder(s layers.Scope) error {
	c := m.Config
	var err error
	if m.EmbeddingsProject, err = layers.NewLinear(s.Sub("embedding_hidden_mapping_in"), c.EmbeddingSize, c.HiddenSize, true); err != nil {
		return err
	}
	groups := make([][]*layers.EncoderBlock, c.NumHiddenGroups)
	for gi := range groups {
		gs := s.Sub("albert_layer_groups").Index(gi).Sub("albert_layers")
		for i := 0; i < c.InnerGroupNum; i++ {
			b, err := layers.NewEncoderBlock(gs.Index(i), c.block())
			if err != nil {
				return err
			}
			groups[gi] = append(groups[gi], b)
		}
	}
	perGroup := c.NumHiddenLayers / c.NumHiddenGroups
	m.Encoder = &layers.Encoder{}
	for l := 0; l < c.NumHiddenLayers; l++ {
		m.Encoder.Layers = append(m.Encoder.Layers, groups[l/perGroup]...)
	}
	return nil
}

// outerStates picks transformers' hidden_states from the encoder's: the
// input and each of num_hidden_layers layers' outputs. An ALBERT with
// inner_group_num > 1 runs that many blocks per layer, and only each
// layer's last output is a hidden state (AlbertTransformer appends one
// per layer).
func (c Config) outerStates(h []*gorgonia.Node) []*gorgonia.Node {
	if c.variant() != albertVariant || c.InnerGroupNum <= 1 {
		return h
	}
	out := []*gorgonia.Node{h[0]}
	for i := c.InnerGroupNum; i < len(h); i += c.InnerGroupNum {
		out = append(out, h[i])
	}
	return out
}

// describeShared is what zoo inspect adds after an ALBERT's layer count:
// " (num_hidden_groups 2, inner_group_num 1, embedding_size 128)"; "" for
// the other types.
func (c Config) describeShared() string {
	if c.variant() != albertVariant {
		return ""
	}
	return fmt.Sprintf(" (num_hidden_groups %d, inner_group_num %d, embedding_size %d)", c.NumHiddenGroups, c.InnerGroupNum, c.EmbeddingSize)
}

// albertDefaults are AlbertConfig's defaults (albert-xxlarge's shapes).
func albertDefaults() albertConfig {
	drop := 0.1
	return albertConfig{VocabSize: 30000, EmbeddingSize: 128, HiddenSize: 4096, NumHiddenLayers: 12, NumHiddenGroups: 1,
		NumAttentionHeads: 64, IntermediateSize: 16384, InnerGroupNum: 1, HiddenAct: "gelu_new",
		MaxPositionEmbeddings: 512, TypeVocabSize: 2, InitializerRange: 0.02, LayerNormEps: 1e-12,
		ClassifierDropoutProb: &drop, PositionEmbeddingType: "absolute"}
}

// albertConfig is an ALBERT config.json under AlbertConfig's names;
// albertCodec converts it to and from Config.
type albertConfig struct {
	VocabSize                 int     `json:"vocab_size"`
	EmbeddingSize             int     `json:"embedding_size"`
	HiddenSize                int     `json:"hidden_size"`
	NumHiddenLayers           int     `json:"num_hidden_layers"`
	NumHiddenGroups           int     `json:"num_hidden_groups"`
	NumAttentionHeads         int     `json:"num_attention_heads"`
	IntermediateSize          int     `json:"intermediate_size"`
	InnerGroupNum             int     `json:"inner_group_num"`
	HiddenAct                 string  `json:"hidden_act"`
	HiddenDropoutProb         float64 `json:"hidden_dropout_prob"`
	AttentionProbsDropoutProb float64 `json:"attention_probs_dropout_prob"`
	MaxPositionEmbeddings     int     `json:"max_position_embeddings"`
	TypeVocabSize             int     `json:"type_vocab_size"`
	InitializerRange          float64 `json:"initializer_range"`
	LayerNormEps              float64 `json:"layer_norm_eps"`
	// ClassifierDropoutProb is null when the token classifier is to use
	// hidden_dropout_prob (AlbertForTokenClassification reads it so).
	ClassifierDropoutProb *float64                   `json:"classifier_dropout_prob"`
	PositionEmbeddingType string                     `json:"position_embedding_type"`
	PadTokenID            int                        `json:"pad_token_id"`
	ID2Label              map[string]string          `json:"id2label,omitempty"`
	Extra                 map[string]json.RawMessage `json:"-"`
}

// albertCodecJSON reads and writes AlbertConfig's keys; bos_token_id 2 and
// eos_token_id 3, AlbertConfig's, are kept and written when a config
// lacks them, as save_pretrained writes them.
var albertCodecJSON = models.NewCodec(models.Descriptor[albertConfig]{
	Family: "albert config", ModelType: AlbertModelType, Defaults: albertDefaults, Refused: refused,
	Inert: func(albertConfig) map[string]any { return map[string]any{"bos_token_id": 2, "eos_token_id": 3} },
})

func toAlbert(c Config) albertConfig {
	return albertConfig{VocabSize: c.VocabSize, EmbeddingSize: c.EmbeddingSize, HiddenSize: c.HiddenSize, NumHiddenLayers: c.NumHiddenLayers,
		NumHiddenGroups: c.NumHiddenGroups, NumAttentionHeads: c.NumAttentionHeads, IntermediateSize: c.IntermediateSize,
		InnerGroupNum: c.InnerGroupNum, HiddenAct: c.HiddenAct, HiddenDropoutProb: c.HiddenDropoutProb,
		AttentionProbsDropoutProb: c.AttentionProbsDropoutProb, MaxPositionEmbeddings: c.MaxPositionEmbeddings,
		TypeVocabSize: c.TypeVocabSize, InitializerRange: c.InitializerRange, LayerNormEps: c.LayerNormEps,
		ClassifierDropoutProb: c.ClassifierDropout, PositionEmbeddingType: c.PositionEmbeddingType, PadTokenID: c.PadTokenID,
		ID2Label: c.ID2Label, Extra: c.Extra}
}

func fromAlbert(a albertConfig) Config {
	return Config{ModelType: AlbertModelType, VocabSize: a.VocabSize, EmbeddingSize: a.EmbeddingSize, HiddenSize: a.HiddenSize,
		NumHiddenLayers: a.NumHiddenLayers, NumHiddenGroups: a.NumHiddenGroups, NumAttentionHeads: a.NumAttentionHeads,
		IntermediateSize: a.IntermediateSize, InnerGroupNum: a.InnerGroupNum, HiddenAct: a.HiddenAct,
		HiddenDropoutProb: a.HiddenDropoutProb, AttentionProbsDropoutProb: a.AttentionProbsDropoutProb,
		MaxPositionEmbeddings: a.MaxPositionEmbeddings, TypeVocabSize: a.TypeVocabSize, InitializerRange: a.InitializerRange,
		LayerNormEps: a.LayerNormEps, ClassifierDropout: a.ClassifierDropoutProb, PositionEmbeddingType: a.PositionEmbeddingType,
		PadTokenID: a.PadTokenID, ID2Label: a.ID2Label, Extra: a.Extra}
}

// albertStart is the albertConfig that reading into c starts from: c's
// values when c is set, as encoding/json keeps them. When c is set but
// another model type's (a pretraining config's BERT model section read
// as an ALBERT), the keys only ALBERT has start at AlbertConfig's
// defaults (embedding_size at most hidden_size).
func albertStart(c *Config) albertConfig {
	if c.VocabSize == 0 && c.HiddenSize == 0 && c.NumHiddenLayers == 0 {
		return albertConfig{}
	}
	a := toAlbert(*c)
	if c.ModelType != AlbertModelType {
		d := albertDefaults()
		a.EmbeddingSize, a.NumHiddenGroups, a.InnerGroupNum = min(d.EmbeddingSize, c.HiddenSize), d.NumHiddenGroups, d.InnerGroupNum
		if a.ClassifierDropoutProb == nil {
			a.ClassifierDropoutProb = d.ClassifierDropoutProb
		}
	}
	return a
}

// albertCodec is albertCodecJSON on Config (configCodec).
var albertCodec = renamedCodec[albertConfig]{json: albertCodecJSON, to: toAlbert, from: fromAlbert, start: albertStart}

// AlbertBase is albert-base-v2
// (https://huggingface.co/albert/albert-base-v2/blob/main/config.json):
// 12 layers sharing one group of one layer, 12 heads, 768 wide, 3072
// inner, embeddings 128 wide, 30,000 tokens, 512 positions, 2 token types,
// gelu_new, no dropout: 11,683,584 parameters (AlbertModel with its
// pooler).
func AlbertBase() Config {
	a := albertDefaults()
	a.HiddenSize, a.NumAttentionHeads, a.IntermediateSize = 768, 12, 3072
	return fromAlbert(a)
}

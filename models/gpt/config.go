// Package gpt is a decoder-only causal language model of the GPT-2 kind,
// built from the zoo's shared layers, with text generation through a KV
// cache and checkpoints that load into and from Hugging Face's GPT-2.
package gpt

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// Config describes a GPT. Its JSON field names are those of Hugging Face's
// GPT-2 config.json, so a GPT-2 config.json decodes into it directly: see
// transformers' GPT2Config
// (https://github.com/huggingface/transformers/blob/main/src/transformers/models/gpt2/configuration_gpt2.py)
// and the PretrainedConfig it extends (configuration_utils.py).
//
// Every key of such a config.json is, when read (UnmarshalJSON), one of:
//
//   - computed: a field below, which the model implements as transformers'
//     modeling_gpt2.py does with eager attention (transformers' other
//     attention kernels may skip the layer-wise scaling, its code says);
//     GPT2Config's attribute_map aliases hidden_size,
//     max_position_embeddings, num_attention_heads and num_hidden_layers
//     set n_embd, n_positions, n_head and n_layer; num_labels, without
//     id2label, names LABEL_0, LABEL_1, … as transformers does;
//   - refused: a value that makes transformers compute something this model
//     does not (add_cross_attention true, a non-empty pruned_heads, a
//     problem_type other than single_label_classification) is an error
//     that names the key and says what to do; so is null for a field that
//     cannot be null;
//   - kept: every other key goes to Extra, and Save writes it back as
//     read. The known ones change nothing the model computes: the summary_*
//     of GPT2DoubleHeadsModel's multiple-choice head, which the zoo does not
//     have; use_cache, torch_dtype, n_ctx (unused by transformers' GPT-2),
//     output_*, return_dict, is_decoder, _name_or_path,
//     transformers_version and the like; and the generation settings of
//     transformers' generate, which Config.Generation reads (when the
//     checkpoint has no generation_config.json): Generate and BeamSearch
//     apply its rules (bad_words_ids, no_repeat_ngram_size,
//     forced_eos_token_id, renormalize_logits) and refuse, by name, a
//     setting they do not implement (repetition_penalty, min_length, …);
//     zoo generate takes its defaults (max_length, max_new_tokens,
//     do_sample, temperature, top_k, top_p, num_beams, length_penalty,
//     early_stopping, num_return_sequences) for the flags it is not
//     given, and notes task_specific_params, which only transformers'
//     pipelines read. An unknown key is taken to be metadata too: a GPT-2
//     config.json has no other fields that compute.
//
// model_type must be "gpt2"; architectures and label2id are written from
// what Save saves (see Model.Save), not kept.
type Config struct {
	VocabSize          int     `json:"vocab_size"`
	NPositions         int     `json:"n_positions"` // the context length (block size)
	NEmbd              int     `json:"n_embd"`
	NLayer             int     `json:"n_layer"`
	NHead              int     `json:"n_head"`
	NInner             int     `json:"n_inner"` // feed-forward width; 0 (null in JSON) means 4·n_embd
	ActivationFunction string  `json:"activation_function"`
	ResidPdrop         float64 `json:"resid_pdrop"`
	EmbdPdrop          float64 `json:"embd_pdrop"`
	AttnPdrop          float64 `json:"attn_pdrop"`
	LayerNormEpsilon   float64 `json:"layer_norm_epsilon"`
	InitializerRange   float64 `json:"initializer_range"`
	TieWordEmbeddings  bool    `json:"tie_word_embeddings"` // LM head = wte; absent in JSON means true
	BOSTokenID         int     `json:"bos_token_id"`
	EOSTokenID         int     `json:"eos_token_id"`
	// PadTokenID is the id that pads a batch, nil (null) for none; a
	// classifier's last real token is found from it (see Classifier).
	PadTokenID *int `json:"pad_token_id,omitempty"`
	// ScaleAttnWeights divides q·kᵀ by √head_dim; false leaves it unscaled.
	// Absent in JSON means true, as in the presets: a Config written out
	// by hand must set it for GPT-2's attention.
	ScaleAttnWeights bool `json:"scale_attn_weights"`
	// ScaleAttnByInverseLayerIdx further divides layer i's q·kᵀ by i+1
	// (i from 0).
	ScaleAttnByInverseLayerIdx bool `json:"scale_attn_by_inverse_layer_idx"`
	// ReorderAndUpcastAttn is accepted and written back, and changes
	// nothing here. In transformers it computes q·kᵀ in float32 with the
	// scale folded into the product (baddbmm's alpha) rather than applied
	// after it, and the softmax in float32: a guard against fp16/bf16
	// overflow under autocast. The zoo computes attention in float32 or
	// float64 only, so both paths agree up to float32 rounding (checked
	// against the PyTorch reference in TestParityAttentionOptions).
	ReorderAndUpcastAttn bool `json:"reorder_and_upcast_attn"`
	// ID2Label names the classes of a sequence classifier, by id ("0", "1", …).
	ID2Label map[string]string `json:"id2label,omitempty"`
	// Extra holds the config.json keys this Config does not model, as read
	// (see above); Save writes them back. Keys Config models, and refused
	// values, are errors in Validate and MarshalJSON.
	Extra map[string]json.RawMessage `json:"-"`
	// GenerationConfig is the checkpoint's generation_config.json, as
	// read (a JSON object), when it is not the one Save derives from the
	// config (see GenerationConfigJSON): a Hugging Face checkpoint's, or
	// one edited by hand. Save writes it back byte for byte, and Generate
	// follows it instead of config.json's generation fields, as
	// transformers' generate does (see Generation). It is nil otherwise,
	// and then Save writes the derived one. It is not a config.json key.
	GenerationConfig json.RawMessage `json:"-"`
}

// defaults are GPT-2's config defaults, for fields a config.json leaves out.
func defaults() Config {
	return Config{
		VocabSize: 50257, NPositions: 1024, NEmbd: 768, NLayer: 12, NHead: 12,
		ActivationFunction: "gelu_new", ResidPdrop: 0.1, EmbdPdrop: 0.1, AttnPdrop: 0.1,
		LayerNormEpsilon: 1e-5, InitializerRange: 0.02, TieWordEmbeddings: true,
		BOSTokenID: 50256, EOSTokenID: 50256, ScaleAttnWeights: true,
	}
}

// GPT2Small is GPT-2 small (openai-community/gpt2): 124,439,808 parameters.
func GPT2Small() Config { return defaults() }

// Nano is the size of nanoGPT's character-level Shakespeare model: 6 layers,
// 6 heads, 384 wide, a 256-token context, 65 characters, dropout 0.2:
// 10,770,816 parameters (10,672,512 without positions, as nanoGPT counts).
func Nano() Config {
	c := defaults()
	c.VocabSize, c.NPositions, c.NEmbd, c.NLayer, c.NHead = 65, 256, 384, 6, 6
	c.ResidPdrop, c.EmbdPdrop, c.AttnPdrop = 0.2, 0.2, 0.2
	c.BOSTokenID, c.EOSTokenID = 0, 0
	return c
}

// Micro is small enough for unit tests: 2 layers, 4 heads, 32 wide, a
// 32-token context, 96 tokens, no dropout: 29,568 parameters.
func Micro() Config {
	c := defaults()
	c.VocabSize, c.NPositions, c.NEmbd, c.NLayer, c.NHead = 96, 32, 32, 2, 4
	c.ResidPdrop, c.EmbdPdrop, c.AttnPdrop = 0, 0, 0
	c.BOSTokenID, c.EOSTokenID = 95, 95
	return c
}

// Inner is the feed-forward width.
func (c Config) Inner() int {
	if c.NInner > 0 {
		return c.NInner
	}
	return 4 * c.NEmbd
}

// AttentionScale is the factor on q·kᵀ in layer i (from 0), as
// transformers' GPT2Attention computes it: 1/√head_dim, or 1 without
// scale_attn_weights, divided by i+1 with scale_attn_by_inverse_layer_idx.
func (c Config) AttentionScale(layer int) float64 {
	s := 1.0
	if c.ScaleAttnWeights {
		s /= math.Sqrt(float64(c.NEmbd / c.NHead))
	}
	if c.ScaleAttnByInverseLayerIdx {
		s /= float64(layer + 1)
	}
	return s
}

// Validate reports a configuration that cannot be built, or that is
// absurd: each size at most models.MaxDim (n_layer models.MaxLayers, the
// labels models.MaxLabels), and a parameter count that fits int. Whether
// the model fits the machine's memory is New's check (models.CheckParams).
func (c Config) Validate() error {
	switch {
	case c.VocabSize <= 0 || c.NPositions <= 0 || c.NEmbd <= 0 || c.NLayer <= 0 || c.NHead <= 0:
		return fmt.Errorf("gpt config: vocab_size %d, n_positions %d, n_embd %d, n_layer %d and n_head %d must be positive",
			c.VocabSize, c.NPositions, c.NEmbd, c.NLayer, c.NHead)
	case c.NEmbd%c.NHead != 0:
		return fmt.Errorf("gpt config: n_embd %d is not divisible by n_head %d", c.NEmbd, c.NHead)
	case c.NInner < 0:
		return fmt.Errorf("gpt config: n_inner %d is negative", c.NInner)
	}
	if err := c.checkSizes(); err != nil {
		return err
	}
	switch {
	case !(c.LayerNormEpsilon > 0):
		return fmt.Errorf("gpt config: layer_norm_epsilon %g must be positive", c.LayerNormEpsilon)
	case !(c.InitializerRange >= 0):
		return fmt.Errorf("gpt config: initializer_range %g must not be negative", c.InitializerRange)
	case c.EOSTokenID >= c.VocabSize || c.BOSTokenID >= c.VocabSize:
		return fmt.Errorf("gpt config: bos_token_id %d or eos_token_id %d is outside the vocabulary of %d", c.BOSTokenID, c.EOSTokenID, c.VocabSize)
	case c.PadTokenID != nil && (*c.PadTokenID < 0 || *c.PadTokenID >= c.VocabSize):
		return fmt.Errorf("gpt config: pad_token_id %d is outside the vocabulary of %d", *c.PadTokenID, c.VocabSize)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"resid_pdrop", c.ResidPdrop}, {"embd_pdrop", c.EmbdPdrop}, {"attn_pdrop", c.AttnPdrop}} {
		if !(p.v >= 0 && p.v < 1) {
			return fmt.Errorf("gpt config: %s %g must be in [0, 1)", p.name, p.v)
		}
	}
	if _, err := layers.ParseActivation(c.ActivationFunction); err != nil {
		return fmt.Errorf("gpt config: activation_function: %w", err)
	}
	return c.checkExtra()
}

// checkSizes bounds every size field (see models.MaxDim and
// models.MaxLayers) and refuses a parameter count that overflows int.
func (c Config) checkSizes() error {
	if err := models.CheckSizes("gpt config",
		models.Size{Field: "vocab_size", V: c.VocabSize, Max: models.MaxDim},
		models.Size{Field: "n_positions", V: c.NPositions, Max: models.MaxDim},
		models.Size{Field: "n_embd", V: c.NEmbd, Max: models.MaxDim},
		models.Size{Field: "n_inner", V: c.Inner(), Max: models.MaxDim},
		models.Size{Field: "n_layer", V: c.NLayer, Max: models.MaxLayers},
		models.Size{Field: "n_head", V: c.NHead, Max: models.MaxDim},
	); err != nil {
		return err
	}
	if len(c.ID2Label) > models.MaxLabels {
		return fmt.Errorf("gpt config: id2label has %d labels, more than %d", len(c.ID2Label), models.MaxLabels)
	}
	terms := c.paramTerms()
	if n := c.NumParams(); n == math.MaxInt64 || n > math.MaxInt {
		big := terms[0]
		for _, t := range terms {
			if t.N > big.N {
				big = t
			}
		}
		return fmt.Errorf("gpt config: the parameter count overflows int: %s; lower %s", big.What, big.Lower)
	}
	return nil
}

// NumParams is the number of learnable scalars New allocates for c,
// computed without allocating (math.MaxInt64 if it overflows): wte V·d,
// wpe P·d, per layer 4d² + 2d·I + 9d + I (c_attn 3d² + 3d, attn.c_proj
// d² + d, mlp.c_fc d·I + I, mlp.c_proj I·d + d, two LayerNorms 2d each),
// ln_f 2d, and an untied lm_head V·d. A classifier adds its score,
// num_labels·d (see NewClassifier).
func (c Config) NumParams() int64 {
	var n int64
	for _, t := range c.paramTerms() {
		n = models.Sum(n, t.N)
	}
	return n
}

// paramTerms are NumParams' summands, each naming its fields.
func (c Config) paramTerms() []models.Term {
	v, p, d, l, in := int64(c.VocabSize), int64(c.NPositions), int64(c.NEmbd), int64(c.NLayer), int64(c.Inner())
	perLayer := models.Sum(models.Mul(4, d, d), models.Mul(2, d, in), models.Mul(9, d), in)
	t := []models.Term{
		{What: fmt.Sprintf("wte, vocab_size %d × n_embd %d", v, d), Lower: "vocab_size", N: models.Mul(v, d)},
		{What: fmt.Sprintf("wpe, n_positions %d × n_embd %d", p, d), Lower: "n_positions", N: models.Mul(p, d)},
		{What: fmt.Sprintf("the blocks, n_layer %d × %s per layer (n_embd %d, n_inner %d)", l, models.Count(perLayer), d, in), Lower: "n_layer, n_embd or n_inner", N: models.Mul(l, perLayer)},
		{What: "ln_f", Lower: "n_embd", N: models.Mul(2, d)},
	}
	if !c.TieWordEmbeddings {
		t = append(t, models.Term{What: fmt.Sprintf("lm_head, vocab_size %d × n_embd %d", v, d), Lower: "vocab_size", N: models.Mul(v, d)})
	}
	return t
}

// ActivationBytes estimates the float32 buffers of one step of the model
// on B windows of T tokens, in bytes (math.MaxInt64 if it overflows).
// Gorgonia's tape machine keeps every node's output, and in training its
// gradient too, so the estimate counts the tensors the graph of a block
// makes: per layer about 16 (B·T·d) tensors (LayerNorms, q, k, v, the
// residuals, the projections), 4 (B·h·T·T) attention tensors (scores,
// mask, softmax, dropout) and 2 (B·T·I) feed-forward tensors, doubled in
// training for the gradients; plus the head, 3 (B·T·V) for the LM's
// logits, softmax and gradient when lm is true (vocab_size at least 256,
// as a tokenizer decides it later), else nothing. The counts are those of
// `pretrain gpt`'s first memory check, which this generalises; Korthikanti et al. 2022 ("Reducing Activation Recomputation in
// Large Transformer Models", §4.1) derive the same form, 34·B·T·d +
// 5·B·h·T² bytes per layer, for PyTorch's fused 16-bit kernels.
func (c Config) ActivationBytes(batch, t int, lm, training bool) int64 {
	b, tt, d, h, in := int64(batch), int64(t), int64(c.NEmbd), int64(c.NHead), int64(c.Inner())
	perLayer := models.Sum(models.Mul(16, b, tt, d), models.Mul(4, b, h, tt, tt), models.Mul(2, b, tt, in))
	if training {
		perLayer = models.Mul(2, perLayer)
	}
	n := models.Mul(int64(c.NLayer), perLayer)
	if lm {
		n = models.Sum(n, models.Mul(3, b, tt, max(int64(c.VocabSize), 256)))
	}
	return models.Mul(4, n)
}

// refused are the config.json keys whose values, other than their
// defaults, make transformers' GPT-2 compute what this model does not.
var refused = []models.Refusal{
	{Key: "add_cross_attention", OK: func(v any) bool { return v == nil || v == false },
		Why: "is not supported: zoo's GPT is decoder-only, without GPT-2's cross-attention layers (h.N.crossattention, h.N.ln_cross_attn); use a checkpoint without them"},
	{Key: "pruned_heads", OK: func(v any) bool { m, ok := v.(map[string]any); return v == nil || ok && len(m) == 0 },
		Why: "is not supported: zoo's GPT has n_head heads in every layer, and a pruned layer's c_attn and c_proj are narrower; use an unpruned checkpoint"},
	{Key: "problem_type", OK: func(v any) bool { return v == nil || v == "single_label_classification" },
		Why: "is not supported: zoo's GPT classifier trains with softmax cross-entropy over num_labels ≥ 2 classes (single_label_classification); regression and multi-label heads need another loss"},
}

// aliases is GPT2Config.attribute_map: names transformers reads as others.
var aliases = []models.Alias{
	{Alias: "hidden_size", Key: "n_embd"}, {Alias: "max_position_embeddings", Key: "n_positions"},
	{Alias: "num_attention_heads", Key: "n_head"}, {Alias: "num_hidden_layers", Key: "n_layer"},
}

// codec reads and writes GPT-2's config.json (see Config): the aliases,
// n_inner 0 as null, the activation under Hugging
// Face's name.
var codec = models.NewCodec(models.Descriptor[Config]{
	Family: "gpt config", ModelType: "gpt2", Defaults: defaults, Refused: refused, Aliases: aliases,
	ZeroAsNull: []string{"n_inner"},
	Canon: func(c *Config) {
		if name, err := layers.HFActivationName(c.ActivationFunction); err == nil {
			c.ActivationFunction = name // the zoo's old gelu_tanh is gelu_new
		}
	},
})

// checkExtra rejects Extra keys that Config models and refused values.
func (c Config) checkExtra() error { return codec.CheckExtra(c) }

// The architectures Save writes: transformers' class for the layout.
const (
	archLM         = "GPT2LMHeadModel"
	archClassifier = "GPT2ForSequenceClassification"
)

// MarshalJSON writes a Hugging Face GPT-2 config.json: n_inner 0 as null,
// the activation under Hugging Face's name, model_type, architectures
// (GPT2ForSequenceClassification with id2label, else GPT2LMHeadModel) and
// label2id, then the Extra keys in name order.
func (c Config) MarshalJSON() ([]byte, error) {
	arch := archLM
	if len(c.ID2Label) > 0 {
		arch = archClassifier
	}
	return codec.Marshal(c, arch)
}

// UnmarshalJSON reads a config.json as the Config doc describes. Fields it
// leaves out keep their values when c is already set, as encoding/json does,
// and otherwise take GPT-2's defaults (tie_word_embeddings and
// scale_attn_weights default to true). The zoo's old activation name
// gelu_tanh reads as gelu_new.
func (c *Config) UnmarshalJSON(b []byte) error { return codec.Unmarshal(b, c) }

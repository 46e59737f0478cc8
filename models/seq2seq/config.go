// Package seq2seq is the encoder-decoder Transformer of "Attention Is All
// You Need" (Vaswani et al. 2017), built from the zoo's shared layers:
// translation and denoising, greedy and beam-search decoding through a KV
// cache, and checkpoints in Hugging Face's Marian layout (MarianMTModel), so
// that OPUS-MT checkpoints load here and the zoo's load into transformers.
package seq2seq

import (
	"encoding/json"
	"fmt"

	"github.com/d73a19ff/zoo/layers"
)

// ModelType is the model_type of the config.json this package writes:
// Hugging Face's Marian.
const ModelType = "marian"

// legacyModelType is the model_type of the zoo's checkpoints before they
// were Marian's; Load still reads them.
const legacyModelType = "seq2seq"

// Config describes a Transformer. It is Hugging Face's MarianConfig
// (https://github.com/huggingface/transformers/blob/main/src/transformers/models/marian/configuration_marian.py):
// config.json holds it under Marian's names, given with each field, and the
// zoo's older names still read (see UnmarshalJSON).
type Config struct {
	DModel           int     // d_model
	NumHeads         int     // encoder_attention_heads and decoder_attention_heads, which must be equal
	DFF              int     // encoder_ffn_dim and decoder_ffn_dim, which must be equal
	NumEncoderLayers int     // encoder_layers
	NumDecoderLayers int     // decoder_layers
	Dropout          float64 // dropout: on embeddings and every sublayer output (P_drop, §5.4)
	AttentionDropout float64 // attention_dropout: on attention probabilities; 0 in the paper
	// ActivationDropout (activation_dropout) is on the feed-forward's
	// hidden activations; 0 in the paper.
	ActivationDropout float64
	MaxLen            int // max_position_embeddings: the longest source and target, in tokens
	SrcVocabSize      int // vocab_size
	TgtVocabSize      int // decoder_vocab_size
	// ShareEmbeddings (share_encoder_decoder_embeddings) uses one table
	// for source and target (a joint vocabulary, §3.4): model.shared.weight.
	ShareEmbeddings bool
	// TieOutput (tie_word_embeddings) makes the output projection the
	// target embedding table (Press & Wolf 2017); otherwise it is
	// lm_head.weight.
	TieOutput bool
	// NormFirst is pre-norm; the paper and Marian are post-norm ("Add &
	// Norm"). config.json says normalize_before and add_final_layer_norm
	// (the names of transformers 3's BART), which MarianMTModel ignores.
	NormFirst  bool
	Activation string // activation_function: relu (the paper), gelu, gelu_new or swish (OPUS-MT)
	// LayerNormEps is the LayerNorms' ε. Marian's is fixed at 1e-5;
	// another value is written as layer_norm_eps, which MarianMTModel
	// ignores.
	LayerNormEps float64
	PadTokenID   int // pad_token_id
	// BOSTokenID (decoder_start_token_id) starts every decoder input.
	// Marian starts with the pad token; the zoo's own models with a bos
	// token. Marian's bos_token_id is not used by the model.
	BOSTokenID int
	EOSTokenID int // eos_token_id: ends every source and target
	// ScaleEmbedding (scale_embedding) multiplies token embeddings by
	// √d_model (§3.4), as the paper and OPUS-MT do.
	ScaleEmbedding bool
	// PositionLayout is the sinusoidal table's layout: layers.SinCosConcat
	// (all sines, then all cosines) is Marian's and the default (also when
	// empty); layers.SinCosInterleaved is the paper's and the zoo's before
	// it was Marian, written as "sinusoidal_layout": "interleaved", which
	// MarianMTModel ignores.
	PositionLayout layers.SinusoidalLayout
	// Extra holds the config.json fields that do not change what the model
	// computes (architectures, task_specific_params, num_beams,
	// transformers_version, …), as read, so that Save writes them back
	// unchanged (as their JSON text). It is nil when there are none.
	Extra map[string]json.RawMessage
}

// Base is the paper's base model (Table 3): 6+6 layers, 512 wide, 8 heads,
// d_ff 2048, dropout 0.1, post-norm, ReLU, one shared and tied vocabulary of
// 37,000 BPE tokens: 63,082,496 parameters (the paper's "65M" counts
// differently; this is 18,944,000 in the table, 18,914,304 in the encoder
// and 25,224,192 in the decoder).
func Base() Config {
	return Config{
		DModel: 512, NumHeads: 8, DFF: 2048, NumEncoderLayers: 6, NumDecoderLayers: 6,
		Dropout: 0.1, MaxLen: 256, SrcVocabSize: 37000, TgtVocabSize: 37000,
		ShareEmbeddings: true, TieOutput: true, Activation: "relu", LayerNormEps: 1e-5,
		PadTokenID: 0, BOSTokenID: 1, EOSTokenID: 2, ScaleEmbedding: true, PositionLayout: layers.SinCosConcat,
	}
}

// Small is the demo size for English→German phrases on two cores: 3+3
// layers, 256 wide, 4 heads, d_ff 1024, a shared vocabulary of 8,000:
// 7,577,600 parameters.
func Small() Config {
	c := Base()
	c.DModel, c.NumHeads, c.DFF, c.NumEncoderLayers, c.NumDecoderLayers = 256, 4, 1024, 3, 3
	c.SrcVocabSize, c.TgtVocabSize, c.MaxLen = 8000, 8000, 64
	return c
}

// Tiny is for tests: 2+2 layers, 32 wide, 4 heads, d_ff 64, a shared
// vocabulary of 11 (the Annotated Transformer's copy task: 0 padding, 1
// start, 2 end and 8 symbols), no dropout: 43,104 parameters.
func Tiny() Config {
	c := Base()
	c.DModel, c.NumHeads, c.DFF, c.NumEncoderLayers, c.NumDecoderLayers = 32, 4, 64, 2, 2
	c.SrcVocabSize, c.TgtVocabSize, c.MaxLen, c.Dropout = 11, 11, 16, 0
	return c
}

// Validate reports a configuration that cannot be built, naming the
// config.json field.
func (c Config) Validate() error {
	switch {
	case c.DModel <= 0 || c.NumHeads <= 0 || c.DFF <= 0 || c.NumEncoderLayers <= 0 || c.NumDecoderLayers <= 0:
		return fmt.Errorf("seq2seq config: d_model %d, attention heads %d, ffn_dim %d, encoder_layers %d and decoder_layers %d must be positive",
			c.DModel, c.NumHeads, c.DFF, c.NumEncoderLayers, c.NumDecoderLayers)
	case c.DModel%c.NumHeads != 0:
		return fmt.Errorf("seq2seq config: d_model %d is not divisible by encoder_attention_heads %d", c.DModel, c.NumHeads)
	case c.MaxLen < 2:
		return fmt.Errorf("seq2seq config: max_position_embeddings %d must be at least 2", c.MaxLen)
	case c.SrcVocabSize <= 0 || c.TgtVocabSize <= 0:
		return fmt.Errorf("seq2seq config: vocab_size %d and decoder_vocab_size %d must be positive", c.SrcVocabSize, c.TgtVocabSize)
	case c.ShareEmbeddings && c.SrcVocabSize != c.TgtVocabSize:
		return fmt.Errorf("seq2seq config: share_encoder_decoder_embeddings needs one vocabulary, but vocab_size is %d and decoder_vocab_size %d", c.SrcVocabSize, c.TgtVocabSize)
	case !(c.LayerNormEps > 0):
		return fmt.Errorf("seq2seq config: layer_norm_eps %g must be positive", c.LayerNormEps)
	}
	if err := c.layout().Validate(); err != nil {
		return fmt.Errorf("seq2seq config: sinusoidal_layout: %w", err)
	}
	for _, id := range []struct {
		name string
		v    int
	}{{"pad_token_id", c.PadTokenID}, {"decoder_start_token_id", c.BOSTokenID}, {"eos_token_id", c.EOSTokenID}} {
		if id.v < 0 || id.v >= min(c.SrcVocabSize, c.TgtVocabSize) {
			return fmt.Errorf("seq2seq config: %s %d is outside the vocabularies [0, %d)", id.name, id.v, min(c.SrcVocabSize, c.TgtVocabSize))
		}
	}
	if c.PadTokenID == c.EOSTokenID {
		return fmt.Errorf("seq2seq config: pad_token_id %d must differ from eos_token_id %d", c.PadTokenID, c.EOSTokenID)
	}
	if err := c.block().Validate(); err != nil {
		return fmt.Errorf("seq2seq config: %w", err)
	}
	return nil
}

// layout is the position table's layout, Marian's when unset.
func (c Config) layout() layers.SinusoidalLayout {
	if c.PositionLayout == "" {
		return layers.SinCosConcat
	}
	return c.PositionLayout
}

func (c Config) block() layers.BlockConfig {
	norm := layers.PostNorm
	if c.NormFirst {
		norm = layers.PreNorm
	}
	return layers.BlockConfig{
		Dim: c.DModel, Heads: c.NumHeads, FFNDim: c.DFF, Activation: c.Activation, Norm: norm,
		LayerNormEps: c.LayerNormEps, Dropout: c.Dropout, AttentionDropout: c.AttentionDropout,
		ActivationDropout: c.ActivationDropout, Bias: true,
	}
}

// Package seq2seq is the encoder-decoder Transformer of "Attention Is All
// You Need" (Vaswani et al. 2017), built from the zoo's shared layers:
// translation and denoising, greedy and beam-search decoding through a KV
// cache, and checkpoints in Hugging Face's Marian layout (MarianMTModel), so
// that OPUS-MT checkpoints load here and the zoo's load into transformers.
package seq2seq

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
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
	// GenerationConfig is the checkpoint's generation_config.json, as
	// read (a JSON object), when it is not the one Save derives from the
	// config (see GenerationConfigJSON): an OPUS-MT checkpoint's, or one
	// edited by hand. Save writes it back byte for byte, and decoding
	// follows it instead of config.json's generation fields, as
	// transformers' generate does (see Generation). It is nil otherwise,
	// and then Save writes the derived one.
	GenerationConfig json.RawMessage
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

// Validate reports a configuration that cannot be built, or that is
// absurd, naming the config.json field: each size at most models.MaxDim
// (the layer counts models.MaxLayers), and a parameter count that fits
// int. Whether the model fits the machine's memory is New's check
// (models.CheckParams).
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
	if err := c.checkSizes(); err != nil {
		return err
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

// checkSizes bounds every size field (see models.MaxDim and
// models.MaxLayers), naming its config.json field, and refuses a parameter
// count that overflows int.
func (c Config) checkSizes() error {
	if err := models.CheckSizes("seq2seq config",
		models.Size{Field: "d_model", V: c.DModel, Max: models.MaxDim},
		models.Size{Field: "encoder_attention_heads", V: c.NumHeads, Max: models.MaxDim},
		models.Size{Field: "encoder_ffn_dim", V: c.DFF, Max: models.MaxDim},
		models.Size{Field: "encoder_layers", V: c.NumEncoderLayers, Max: models.MaxLayers},
		models.Size{Field: "decoder_layers", V: c.NumDecoderLayers, Max: models.MaxLayers},
		models.Size{Field: "max_position_embeddings", V: c.MaxLen, Max: models.MaxDim},
		models.Size{Field: "vocab_size", V: c.SrcVocabSize, Max: models.MaxDim},
		models.Size{Field: "decoder_vocab_size", V: c.TgtVocabSize, Max: models.MaxDim},
	); err != nil {
		return err
	}
	if n := c.NumParams(); n == math.MaxInt64 || n > math.MaxInt {
		big := largest(c.paramTerms(true))
		return fmt.Errorf("seq2seq config: the parameter count overflows int: %s; lower %s", big.What, big.Lower)
	}
	return nil
}

func largest(terms []models.Term) models.Term {
	big := terms[0]
	for _, t := range terms {
		if t.N > big.N {
			big = t
		}
	}
	return big
}

// NumParams is the number of learnable scalars New allocates for c,
// computed without allocating (math.MaxInt64 if it overflows): the token
// embeddings, V·d once when shared, else (V_src + V_tgt)·d; per encoder
// layer 4d² + 2d·F + 9d + F (q, k, v and out projections 4(d² + d),
// fc1 d·F + F, fc2 F·d + d, two LayerNorms 2d each); per decoder layer
// 8d² + 2d·F + 15d + F (the same plus cross-attention, 4(d² + d), and its
// LayerNorm); a final LayerNorm 2d per stack when pre-norm; and an untied
// lm_head V_tgt·d. Sinusoidal positions are not parameters, nor is the
// final_logits_bias buffer.
func (c Config) NumParams() int64 {
	var n int64
	for _, t := range c.paramTerms(false) {
		n = models.Sum(n, t.N)
	}
	return n
}

// paramTerms are NumParams' summands, each naming its fields, and with
// buffers the final_logits_bias too: what New allocates.
func (c Config) paramTerms(buffers bool) []models.Term {
	d, f, vs, vt := int64(c.DModel), int64(c.DFF), int64(c.SrcVocabSize), int64(c.TgtVocabSize)
	le, ld := int64(c.NumEncoderLayers), int64(c.NumDecoderLayers)
	enc := models.Sum(models.Mul(4, d, d), models.Mul(2, d, f), models.Mul(9, d), f)
	dec := models.Sum(models.Mul(8, d, d), models.Mul(2, d, f), models.Mul(15, d), f)
	var t []models.Term
	if c.ShareEmbeddings {
		t = append(t, models.Term{What: fmt.Sprintf("model.shared, vocab_size %d × d_model %d", vs, d), Lower: "vocab_size", N: models.Mul(vs, d)})
	} else {
		t = append(t,
			models.Term{What: fmt.Sprintf("the encoder's embed_tokens, vocab_size %d × d_model %d", vs, d), Lower: "vocab_size", N: models.Mul(vs, d)},
			models.Term{What: fmt.Sprintf("the decoder's embed_tokens, decoder_vocab_size %d × d_model %d", vt, d), Lower: "decoder_vocab_size", N: models.Mul(vt, d)})
	}
	t = append(t,
		models.Term{What: fmt.Sprintf("the encoder, encoder_layers %d × %s per layer (d_model %d, ffn_dim %d)", le, models.Count(enc), d, f), Lower: "encoder_layers, d_model or encoder_ffn_dim", N: models.Mul(le, enc)},
		models.Term{What: fmt.Sprintf("the decoder, decoder_layers %d × %s per layer (d_model %d, ffn_dim %d)", ld, models.Count(dec), d, f), Lower: "decoder_layers, d_model or decoder_ffn_dim", N: models.Mul(ld, dec)})
	if c.NormFirst {
		t = append(t, models.Term{What: "the final LayerNorms", Lower: "d_model", N: models.Mul(4, d)})
	}
	if !c.TieOutput {
		t = append(t, models.Term{What: fmt.Sprintf("lm_head, decoder_vocab_size %d × d_model %d", vt, d), Lower: "decoder_vocab_size", N: models.Mul(vt, d)})
	}
	if buffers {
		t = append(t, models.Term{What: fmt.Sprintf("final_logits_bias, decoder_vocab_size %d", vt), Lower: "decoder_vocab_size", N: vt})
	}
	return t
}

// ActivationBytes estimates the float32 buffers of one training step
// (training true) or one forward pass on B pairs of Ts source and Tt
// target tokens, in bytes (math.MaxInt64 if it overflows). It counts the
// tensors of the graph as gpt.Config.ActivationBytes does, the tape
// machine keeping every node's output and, in training, its gradient: per
// encoder layer 16 (B·Ts·d), 4 (B·h·Ts·Ts) and 2 (B·Ts·F) tensors; per
// decoder layer 24 (B·Tt·d) (self- and cross-attention), 4 (B·h·Tt·Tt),
// 4 (B·h·Tt·Ts) and 2 (B·Tt·F); doubled in training; plus 3 (B·Tt·V_tgt)
// for the logits, their softmax and gradient. The form is Korthikanti et
// al. 2022's (§4.1, 34·B·T·d + 5·B·h·T² bytes per layer in 16-bit).
func (c Config) ActivationBytes(batch, ts, tt int, training bool) int64 {
	b, s, t := int64(batch), int64(ts), int64(tt)
	d, h, f := int64(c.DModel), int64(c.NumHeads), int64(c.DFF)
	enc := models.Sum(models.Mul(16, b, s, d), models.Mul(4, b, h, s, s), models.Mul(2, b, s, f))
	dec := models.Sum(models.Mul(24, b, t, d), models.Mul(4, b, h, t, t), models.Mul(4, b, h, t, s), models.Mul(2, b, t, f))
	if training {
		enc, dec = models.Mul(2, enc), models.Mul(2, dec)
	}
	n := models.Sum(models.Mul(int64(c.NumEncoderLayers), enc), models.Mul(int64(c.NumDecoderLayers), dec),
		models.Mul(3, b, t, int64(c.TgtVocabSize)))
	return models.Mul(4, n)
}

// DecodeBytes estimates the float32 buffers of decoding B sources of up
// to Ts tokens with beam beams through a KV cache of Tt positions, in bytes
// (math.MaxInt64 if it overflows): the encoder's forward pass over the B
// sources (ActivationBytes' encoder part, not doubled); per decoder layer
// the cached keys and values repeated for the B·beam rows, 2 (B·beam·Tt·d)
// for self-attention and 2 (B·beam·Ts·d) for the encoder output; and a
// step's 3 (B·beam·V_tgt) logits, log-probabilities and candidate scores.
func (c Config) DecodeBytes(batch, beam, ts, tt int) int64 {
	b, s, t := int64(batch), int64(ts), int64(tt)
	r := models.Mul(b, int64(beam))
	d, h, f := int64(c.DModel), int64(c.NumHeads), int64(c.DFF)
	enc := models.Sum(models.Mul(16, b, s, d), models.Mul(4, b, h, s, s), models.Mul(2, b, s, f))
	cache := models.Sum(models.Mul(2, r, t, d), models.Mul(2, r, s, d))
	n := models.Sum(models.Mul(int64(c.NumEncoderLayers), enc), models.Mul(int64(c.NumDecoderLayers), cache),
		models.Mul(3, r, int64(c.TgtVocabSize)))
	return models.Mul(4, n)
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

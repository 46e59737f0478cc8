// Package seq2seq is the encoder-decoder Transformer of "Attention Is All
// You Need" (Vaswani et al. 2017), built from the zoo's shared layers:
// translation and denoising, greedy and beam-search decoding through a KV
// cache, and checkpoints in safetensors with BART/FSMT-style tensor names.
package seq2seq

import (
	"encoding/json"
	"fmt"

	"github.com/d73a19ff/zoo/layers"
)

// ModelType is the model_type of a seq2seq config.json.
const ModelType = "seq2seq"

// Config describes a Transformer. The JSON names are the (and
// PyTorch nn.Transformer's where it has them); the tensor names are BART's.
type Config struct {
	DModel           int     `json:"d_model"`
	NumHeads         int     `json:"num_heads"`
	DFF              int     `json:"d_ff"`
	NumEncoderLayers int     `json:"num_encoder_layers"`
	NumDecoderLayers int     `json:"num_decoder_layers"`
	Dropout          float64 `json:"dropout"`           // on embeddings and every sublayer output (P_drop, §5.4)
	AttentionDropout float64 `json:"attention_dropout"` // on attention probabilities; 0 in the paper
	MaxLen           int     `json:"max_len"`           // the longest source and target, in tokens
	SrcVocabSize     int     `json:"src_vocab_size"`
	TgtVocabSize     int     `json:"tgt_vocab_size"`
	// ShareEmbeddings uses one table for source and target (a joint
	// vocabulary, §3.4): model.shared.weight.
	ShareEmbeddings bool `json:"share_embeddings"`
	// TieOutput makes the output projection the target embedding table
	// (Press & Wolf 2017); otherwise it is lm_head.weight.
	TieOutput    bool    `json:"tie_output"`
	NormFirst    bool    `json:"norm_first"` // pre-norm; the paper is post-norm ("Add & Norm")
	Activation   string  `json:"activation"` // of the feed-forward: relu (the paper) or gelu
	LayerNormEps float64 `json:"layer_norm_eps"`
	PadTokenID   int     `json:"pad_token_id"`
	BOSTokenID   int     `json:"bos_token_id"` // starts every decoder input
	EOSTokenID   int     `json:"eos_token_id"` // ends every target
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
		PadTokenID: 0, BOSTokenID: 1, EOSTokenID: 2,
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

// Validate reports a configuration that cannot be built.
func (c Config) Validate() error {
	switch {
	case c.DModel <= 0 || c.NumHeads <= 0 || c.DFF <= 0 || c.NumEncoderLayers <= 0 || c.NumDecoderLayers <= 0:
		return fmt.Errorf("seq2seq config: d_model %d, num_heads %d, d_ff %d, num_encoder_layers %d and num_decoder_layers %d must be positive",
			c.DModel, c.NumHeads, c.DFF, c.NumEncoderLayers, c.NumDecoderLayers)
	case c.DModel%c.NumHeads != 0:
		return fmt.Errorf("seq2seq config: d_model %d is not divisible by num_heads %d", c.DModel, c.NumHeads)
	case c.MaxLen < 2:
		return fmt.Errorf("seq2seq config: max_len %d must be at least 2", c.MaxLen)
	case c.SrcVocabSize <= 0 || c.TgtVocabSize <= 0:
		return fmt.Errorf("seq2seq config: src_vocab_size %d and tgt_vocab_size %d must be positive", c.SrcVocabSize, c.TgtVocabSize)
	case c.ShareEmbeddings && c.SrcVocabSize != c.TgtVocabSize:
		return fmt.Errorf("seq2seq config: share_embeddings needs one vocabulary, but src_vocab_size is %d and tgt_vocab_size %d", c.SrcVocabSize, c.TgtVocabSize)
	case !(c.LayerNormEps > 0):
		return fmt.Errorf("seq2seq config: layer_norm_eps %g must be positive", c.LayerNormEps)
	}
	for _, id := range []struct {
		name string
		v    int
	}{{"pad_token_id", c.PadTokenID}, {"bos_token_id", c.BOSTokenID}, {"eos_token_id", c.EOSTokenID}} {
		if id.v < 0 || id.v >= min(c.SrcVocabSize, c.TgtVocabSize) {
			return fmt.Errorf("seq2seq config: %s %d is outside the vocabularies [0, %d)", id.name, id.v, min(c.SrcVocabSize, c.TgtVocabSize))
		}
	}
	if c.PadTokenID == c.EOSTokenID || c.PadTokenID == c.BOSTokenID {
		return fmt.Errorf("seq2seq config: pad_token_id %d must differ from bos_token_id %d and eos_token_id %d", c.PadTokenID, c.BOSTokenID, c.EOSTokenID)
	}
	if err := c.block().Validate(); err != nil {
		return fmt.Errorf("seq2seq config: %w", err)
	}
	return nil
}

func (c Config) block() layers.BlockConfig {
	norm := layers.PostNorm
	if c.NormFirst {
		norm = layers.PreNorm
	}
	return layers.BlockConfig{
		Dim: c.DModel, Heads: c.NumHeads, FFNDim: c.DFF, Activation: c.Activation, Norm: norm,
		LayerNormEps: c.LayerNormEps, Dropout: c.Dropout, AttentionDropout: c.AttentionDropout, Bias: true,
	}
}

// fileConfig is Config as config.json holds it, with the model type and
// architecture that tell model families apart.
type fileConfig struct {
	plainConfig
	ModelType     string   `json:"model_type"`
	Architectures []string `json:"architectures"`
}

type plainConfig Config

// MarshalJSON writes config.json with model_type "seq2seq".
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(fileConfig{plainConfig: plainConfig(c), ModelType: ModelType, Architectures: []string{"Transformer"}})
}

// UnmarshalJSON reads a config.json over c's values; a config of another
// model family (a GPT-2 or BERT checkpoint) is an error that says so.
func (c *Config) UnmarshalJSON(b []byte) error {
	f := fileConfig{plainConfig: plainConfig(*c)}
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	if f.ModelType != ModelType && f.ModelType != "" {
		return fmt.Errorf("seq2seq config: model_type %q is another model family; this needs a %q checkpoint", f.ModelType, ModelType)
	}
	*c = Config(f.plainConfig)
	return nil
}

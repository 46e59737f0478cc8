// Package gpt is a decoder-only causal language model of the GPT-2 kind,
// built from the zoo's shared layers, with text generation through a KV
// cache and checkpoints that load into and from Hugging Face's GPT-2.
package gpt

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"github.com/d73a19ff/zoo/layers"
)

// Config describes a GPT. Its JSON field names are those of Hugging Face's
// GPT-2 config.json, so a GPT-2 config.json decodes into it directly.
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
	// ID2Label names the classes of a sequence classifier, by id ("0", "1", …).
	ID2Label map[string]string `json:"id2label,omitempty"`
}

// defaults are GPT-2's config defaults, for fields a config.json leaves out.
func defaults() Config {
	return Config{
		VocabSize: 50257, NPositions: 1024, NEmbd: 768, NLayer: 12, NHead: 12,
		ActivationFunction: "gelu_new", ResidPdrop: 0.1, EmbdPdrop: 0.1, AttnPdrop: 0.1,
		LayerNormEpsilon: 1e-5, InitializerRange: 0.02, TieWordEmbeddings: true,
		BOSTokenID: 50256, EOSTokenID: 50256,
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

// Validate reports a configuration that cannot be built.
func (c Config) Validate() error {
	switch {
	case c.VocabSize <= 0 || c.NPositions <= 0 || c.NEmbd <= 0 || c.NLayer <= 0 || c.NHead <= 0:
		return fmt.Errorf("gpt config: vocab_size %d, n_positions %d, n_embd %d, n_layer %d and n_head %d must be positive",
			c.VocabSize, c.NPositions, c.NEmbd, c.NLayer, c.NHead)
	case c.NEmbd%c.NHead != 0:
		return fmt.Errorf("gpt config: n_embd %d is not divisible by n_head %d", c.NEmbd, c.NHead)
	case c.NInner < 0:
		return fmt.Errorf("gpt config: n_inner %d is negative", c.NInner)
	case !(c.LayerNormEpsilon > 0):
		return fmt.Errorf("gpt config: layer_norm_epsilon %g must be positive", c.LayerNormEpsilon)
	case !(c.InitializerRange >= 0):
		return fmt.Errorf("gpt config: initializer_range %g must not be negative", c.InitializerRange)
	case c.EOSTokenID >= c.VocabSize || c.BOSTokenID >= c.VocabSize:
		return fmt.Errorf("gpt config: bos_token_id %d or eos_token_id %d is outside the vocabulary of %d", c.BOSTokenID, c.EOSTokenID, c.VocabSize)
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
	return nil
}

// hfConfig is Config as Hugging Face writes it.
type hfConfig struct {
	plainConfig
	NInner        *int           `json:"n_inner"`
	ModelType     string         `json:"model_type"`
	Architectures []string       `json:"architectures"`
	Label2ID      map[string]int `json:"label2id,omitempty"`
}

type plainConfig Config

// MarshalJSON writes a Hugging Face GPT-2 config.json: n_inner 0 as null,
// with model_type and architectures.
func (c Config) MarshalJSON() ([]byte, error) {
	h := hfConfig{plainConfig: plainConfig(c), ModelType: "gpt2", Architectures: []string{"GPT2LMHeadModel"}}
	if len(c.ID2Label) > 0 {
		h.Architectures = []string{"GPT2ForSequenceClassification"}
		h.Label2ID = map[string]int{}
		for id, l := range c.ID2Label {
			n, err := strconv.Atoi(id)
			if err != nil {
				return nil, fmt.Errorf("gpt config: id2label key %q is not an integer", id)
			}
			h.Label2ID[l] = n
		}
	}
	if c.NInner > 0 {
		h.NInner = &c.NInner
	}
	return json.Marshal(h)
}

// UnmarshalJSON reads a config.json. Fields it leaves out keep their values
// when c is already set, as encoding/json does, and otherwise take GPT-2's
// defaults (tie_word_embeddings defaults to true).
func (c *Config) UnmarshalJSON(b []byte) error {
	start := defaults()
	if !reflect.ValueOf(*c).IsZero() {
		start = *c
	}
	h := hfConfig{plainConfig: plainConfig(start)}
	if c.NInner > 0 {
		h.NInner = &c.NInner
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return err
	}
	if h.ModelType != "" && h.ModelType != "gpt2" {
		return fmt.Errorf("gpt config: model_type %q is not gpt2", h.ModelType)
	}
	*c = Config(h.plainConfig)
	c.NInner = 0
	if h.NInner != nil {
		c.NInner = *h.NInner
	}
	return nil
}

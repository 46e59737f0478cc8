package pretrain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/d73a19ff/zoo/internal/jsonconfig"
	"github.com/d73a19ff/zoo/models/llama"
	"github.com/d73a19ff/zoo/train"
)

// LlamaConfig is the configuration of LLaMA-style causal-LM training
// (`zoo pretrain llama`, and `zoo finetune llama --task lm` with
// init_from). Its training names are GPTConfig's (train.Args, Hugging
// Face's TrainingArguments); the model section is a Hugging Face
// LlamaConfig (config.json's keys, model_type llama, qwen2 or mistral).
type LlamaConfig struct {
	Corpus string `json:"corpus"` // file, directory or glob; empty: Opticks from the Go toolchain
	// Tokenizer is "bpe" (a SentencePiece-style byte-fallback BPE
	// trained on the corpus, BPEVocab tokens), "char", or the path of a
	// tokenizer.json.
	Tokenizer string `json:"tokenizer"`
	BPEVocab  int    `json:"bpe_vocab_size"` // with "bpe"
	// Preset names the model the model section starts from (LlamaPresets:
	// "opticks", "tiny", "smollm-135m", "tinyllama-1.1b", "qwen2.5-0.5b");
	// the section's keys override it. Empty: DefaultLlama's model.
	Preset string       `json:"preset"`
	Model  llama.Config `json:"model"` // vocab_size, bos_token_id and eos_token_id come from the tokenizer
	// BlockSize is the training window in tokens; 0 is the model's
	// max_position_embeddings.
	BlockSize int `json:"block_size"`
	train.Args
	// ValFraction is the share of the corpus's text (its last
	// characters) held out for validation, cut at a token boundary, so
	// that runs with different tokenizers validate on the same text.
	ValFraction float64 `json:"val_fraction"`
	CacheDir    string  `json:"cache_dir"`     // token cache; empty: <output_dir>/../cache
	Samples     int     `json:"samples"`       // samples printed at the end
	SampleLen   int     `json:"sample_tokens"` // tokens per sample
	InitFrom    string  `json:"init_from"`     // start from this checkpoint (model, config, tokenizer): LM fine-tuning
	// ModelJSON is the config file's model block as written
	// (DecodeLlamaConfig keeps it): with init_from, its keys that differ
	// from the checkpoint's are named as not used.
	ModelJSON json.RawMessage `json:"-"`
}

// LlamaPresets are the model presets LlamaConfig.Preset names, each a
// function returning a fresh config: "opticks" (DefaultLlama's model, the
// size of the GPT main job), "tiny" (llama.Tiny, for tests), and the real
// shapes "smollm-135m", "tinyllama-1.1b" and "qwen2.5-0.5b".
var LlamaPresets = map[string]func() llama.Config{
	"opticks":        opticksLlama,
	"tiny":           llama.Tiny,
	"smollm-135m":    llama.SmolLM135M,
	"tinyllama-1.1b": llama.TinyLlama,
	"qwen2.5-0.5b":   llama.Qwen25_0_5B,
}

// LlamaPreset returns the preset called name (LlamaPresets), or an error
// listing them.
func LlamaPreset(name string) (llama.Config, error) {
	f, ok := LlamaPresets[name]
	if !ok {
		names := make([]string, 0, len(LlamaPresets))
		for n := range LlamaPresets {
			names = append(names, n)
		}
		sort.Strings(names)
		return llama.Config{}, fmt.Errorf("config: preset %q: zoo has %s", name, strings.Join(names, ", "))
	}
	return f(), nil
}

// opticksLlama is the GPT main job's size in LLaMA's shape: 4 layers of
// width 128, 4 query heads sharing 2 key/value heads, block 64, tied
// embeddings, and the SwiGLU width (320) that brings the parameters to
// the GPT's 813,312 within 1% with DefaultLlama's 1024-token BPE
// (820,352).
func opticksLlama() llama.Config {
	c, err := llama.Defaults(llama.ModelLlama)
	if err != nil {
		panic(err) // llama's own model type: cannot fail
	}
	c.VocabSize, c.HiddenSize, c.IntermediateSize, c.NumHiddenLayers = 1024, 128, 320, 4
	c.NumAttentionHeads, c.NumKeyValueHeads, c.MaxPositionEmbeddings = 4, 2, 64
	c.RMSNormEps, c.InitializerRange, c.TieWordEmbeddings = 1e-5, 0.02, true
	c.BOSTokenID, c.EOSTokenID, c.PadTokenID = nil, nil, nil // the tokenizer's
	return c
}

// DefaultLlama is the GPT main job (DefaultGPT) for a LLaMA-style model:
// the same corpus (Opticks), split (the last 10% of the text), steps
// (2000), batch (12 windows of 64 tokens), optimizer and schedule
// (AdamW β (0.9, 0.99), weight decay 0.1, clip 1, 100 warmup steps,
// cosine 1e-3 → 1e-4), with a byte-fallback BPE of 1024 tokens trained on
// the corpus and a model of the GPT's parameter count (opticksLlama).
func DefaultLlama() LlamaConfig {
	g := DefaultGPT()
	g.Args.OutputDir = filepath.Join("runs", "llama-opticks")
	return LlamaConfig{
		Tokenizer: "bpe", BPEVocab: 1024, Model: opticksLlama(), Args: g.Args,
		ValFraction: g.ValFraction, Samples: g.Samples, SampleLen: g.SampleLen,
	}
}

// DecodeLlamaConfig reads a JSON config over base. A "preset" replaces
// base's model before the model section is read over it. Unknown keys,
// in the model section too, and wrong types are errors.
func DecodeLlamaConfig(data []byte, base LlamaConfig) (LlamaConfig, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return base, fmt.Errorf("config: %w", err)
	}
	notes, err := jsonconfig.Rename(raw, train.DeprecatedNames)
	if err != nil {
		return base, err
	}
	cfg := base
	if p, ok := raw["preset"]; ok {
		var name string
		if err := json.Unmarshal(p, &name); err != nil {
			return base, fmt.Errorf("config: preset: %w", err)
		}
		if cfg.Model, err = LlamaPreset(name); err != nil {
			return base, err
		}
	}
	model, hasModel := raw["model"]
	delete(raw, "model") // read below, over the preset's model
	rest, err := json.Marshal(raw)
	if err != nil {
		return base, fmt.Errorf("config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	preset := cfg.Model
	if err := dec.Decode(&cfg); err != nil {
		return base, fmt.Errorf("config: %w", err)
	}
	cfg.Model = preset
	if hasModel {
		if err := decodeLlamaModel(model, &cfg.Model); err != nil {
			return base, err
		}
		cfg.ModelJSON = model
	}
	cfg.Deprecated = append(cfg.Deprecated, notes...)
	return cfg, nil
}

// decodeLlamaModel reads a config's model section over m. A key that the
// model type neither models nor keeps as Hugging Face's inert keys is an
// error: llama.Config keeps unknown keys in Extra (config.json's files
// carry many), but in a training config one is a typo.
func decodeLlamaModel(raw json.RawMessage, m *llama.Config) error {
	before := make(map[string]bool, len(m.Extra))
	for k := range m.Extra {
		before[k] = true
	}
	c := *m
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("config: model: %w", err)
	}
	var unknown []string
	for k := range c.Extra {
		if !before[k] && !slices.Contains(inertLlamaKeys, k) {
			unknown = append(unknown, "model."+k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("config: unknown key %q (a Hugging Face LlamaConfig key is expected)", strings.Join(unknown, ", "))
	}
	*m = c
	return nil
}

// inertLlamaKeys are config.json keys that change nothing and that a
// model section may carry (a config.json pasted in).
var inertLlamaKeys = []string{"architectures", "model_type", "torch_dtype", "transformers_version", "use_cache", "pretraining_tp", "max_window_layers", "layer_types", "use_mrope", "_name_or_path"}

// ReadLlamaConfig reads a JSON config file over base.
func ReadLlamaConfig(path string, base LlamaConfig) (LlamaConfig, error) {
	return readConfigFile(path, base, DecodeLlamaConfig)
}

// Block is the training window: BlockSize, or max_position_embeddings
// when it is 0.
func (c LlamaConfig) Block() int {
	if c.BlockSize > 0 {
		return c.BlockSize
	}
	return c.Model.MaxPositionEmbeddings
}

// Validate reports settings that cannot run.
func (c LlamaConfig) Validate() error {
	if err := checkLMArgs(c.Args, c.ValFraction); err != nil {
		return err
	}
	switch {
	case c.Tokenizer == "":
		return fmt.Errorf("config: tokenizer is empty: give bpe, char or the path of a tokenizer.json")
	case c.Tokenizer == "bpe" && c.BPEVocab < 300:
		return fmt.Errorf("config: bpe_vocab_size %d must be at least 300 (3 special tokens, 256 bytes and a few pieces)", c.BPEVocab)
	}
	if err := checkLMTail(c.Args, c.Samples, c.SampleLen); err != nil {
		return err
	}
	if c.BlockSize < 0 {
		return fmt.Errorf("config: block_size %d must not be negative (0: max_position_embeddings)", c.BlockSize)
	}
	if c.InitFrom != "" { // the checkpoint's model, checked when it loads
		return nil
	}
	m := c.Model
	m.VocabSize = max(m.VocabSize, 1) // the tokenizer sets it and the token ids later
	m.BOSTokenID, m.EOSTokenID, m.PadTokenID = nil, nil, nil
	if err := m.Validate(); err != nil {
		return fmt.Errorf("config: model: %w", err)
	}
	if b := c.Block(); b > m.MaxPositionEmbeddings {
		return fmt.Errorf("config: block_size %d exceeds the model's max_position_embeddings %d: lower --block-size or raise max_position_embeddings", b, m.MaxPositionEmbeddings)
	}
	return nil
}

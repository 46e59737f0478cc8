// Package pretrain runs the zoo's pretraining pipelines (config → run):
// GPT's causal LM on a text corpus (`zoo pretrain gpt`, RunGPT; init_from
// makes it LM fine-tuning), BERT's masked LM and next-sentence prediction
// (RunBERT, EvalBERT), ViT's masked autoencoding (RunViTMAE) and seq2seq
// denoising (RunSeq2Seq). It holds the objectives they train, which the
// model packages do not: GPT's (gpt_task.go), BERT's (bert_task.go, with
// its data in bert_data.go), ViT's masked autoencoding (vit_mae_task.go)
// and seq2seq's (seq2seq_task.go, with its length-bucketed data in
// seq2seq_data.go), each a train.Task and a train.Data; and what seq2seq's
// recipes share (seq2seq_train.go: Seq2SeqTrainConfig, Seq2SeqRecipe),
// which translation fine-tuning (package finetune) builds on. Each Run* is
// train.Run with its recipe (GPTRecipe, BERTRecipe, MAERecipe,
// DenoiseRecipe), its config embedding train.Args. finetune may import
// pretrain; pretrain never imports finetune.
package pretrain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/d73a19ff/zoo/internal/goroot"
	"github.com/d73a19ff/zoo/internal/jsonconfig"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/train"
)

// GPTConfig is the configuration of GPT pretraining. Its JSON names follow
// nanoGPT's train.py; the model section is a Hugging Face GPT-2 config.
type GPTConfig struct {
	Corpus    string     `json:"corpus"`         // file, directory or glob; empty: Opticks from the Go toolchain
	Tokenizer string     `json:"tokenizer"`      // "char", "bpe", or the path of a tokenizer.json
	BPEVocab  int        `json:"bpe_vocab_size"` // with "bpe"
	Model     gpt.Config `json:"model"`          // vocab_size comes from the tokenizer, n_positions is the block size
	train.Args
	ValFraction float64 `json:"val_fraction"`
	CacheDir    string  `json:"cache_dir"`     // token cache; empty: <output_dir>/../cache
	Samples     int     `json:"samples"`       // samples printed at the end
	SampleLen   int     `json:"sample_tokens"` // tokens per sample
	InitFrom    string  `json:"init_from"`     // start from this checkpoint (model, config, tokenizer): LM fine-tuning
	// ModelJSON is the config file's model block as written
	// (DecodeGPTConfig keeps it). With init_from the architecture is the
	// checkpoint's, but the dropout rates the block writes are taken, as
	// nanoGPT's override_args (initFromModel).
	ModelJSON json.RawMessage `json:"-"`
}

// DefaultGPT is nanoGPT's CPU configuration, character level, on Isaac
// Newton's Opticks: 4 layers, 4 heads, 128 wide, block 64, batch 12, 2000
// iterations, dropout 0, learning rate 1e-3 with 100 warmup steps and cosine
// decay to 1e-4, a 90/10 split.
func DefaultGPT() GPTConfig {
	m := gpt.Micro()
	m.NLayer, m.NHead, m.NEmbd, m.NPositions = 4, 4, 128, 64
	m.ActivationFunction = "gelu"
	m.BOSTokenID, m.EOSTokenID = 0, 0 // ids of a vocabulary the tokenizer decides
	m.ResidPdrop, m.EmbdPdrop, m.AttnPdrop = 0, 0, 0
	return GPTConfig{
		Tokenizer: "char", BPEVocab: 2048, Model: m,
		Args: train.Args{BatchSize: 12, GradientAccumulationSteps: 1, MaxSteps: 2000, LearningRate: 1e-3, LRSchedulerType: "cosine", MinLR: 1e-4, WarmupSteps: 100,
			WeightDecay: 0.1, AdamBeta1: 0.9, AdamBeta2: 0.99, AdamEpsilon: 1e-8, MaxGradNorm: 1, EvalSteps: 250, SaveSteps: 500,
			Seed: 1337, OutputDir: filepath.Join("runs", "gpt-opticks")},
		ValFraction: 0.1, Samples: 2, SampleLen: 200,
	}
}

// OpticksPath is where the Go toolchain ships Newton's Opticks.
func OpticksPath() string {
	return goroot.Opticks()
}

// DecodeGPTConfig reads a JSON config over base. Unknown keys, in the model
// section too, and wrong types are errors.
func DecodeGPTConfig(data []byte, base GPTConfig) (GPTConfig, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return base, fmt.Errorf("config: %w", err)
	}
	notes, err := jsonconfig.Rename(raw, train.DeprecatedNames)
	if err != nil {
		return base, err
	}
	if len(notes) > 0 {
		if data, err = json.Marshal(raw); err != nil {
			return base, fmt.Errorf("config: %w", err)
		}
	}
	if m, ok := raw["model"]; ok {
		if err := checkKeys(m, reflect.TypeOf(gpt.Config{}), "model."); err != nil {
			return base, err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	cfg := base
	if err := dec.Decode(&cfg); err != nil {
		return base, fmt.Errorf("config: %w", err)
	}
	cfg.ModelJSON = raw["model"]
	cfg.Deprecated = append(cfg.Deprecated, notes...)
	return cfg, nil
}

// checkKeys rejects keys of an object that the struct has no JSON field for.
func checkKeys(obj json.RawMessage, t reflect.Type, prefix string) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(obj, &keys); err != nil {
		return fmt.Errorf("config: %s: %w", strings.TrimSuffix(prefix, "."), err)
	}
	known := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		known[strings.Split(t.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	for k := range keys {
		if !known[k] {
			return fmt.Errorf("config: unknown key %q", prefix+k)
		}
	}
	return nil
}

// ReadGPTConfig reads a JSON config file over base.
func ReadGPTConfig(path string, base GPTConfig) (GPTConfig, error) {
	return readConfigFile(path, base, DecodeGPTConfig)
}

// Validate reports settings that cannot run.
func (c GPTConfig) Validate() error {
	if err := checkLMArgs(c.Args, c.ValFraction); err != nil {
		return err
	}
	if c.Tokenizer == "bpe" && c.BPEVocab < 260 {
		return fmt.Errorf("config: bpe_vocab_size %d must be at least 260 (256 bytes and a few merges)", c.BPEVocab)
	}
	if err := checkLMTail(c.Args, c.Samples, c.SampleLen); err != nil {
		return err
	}
	m := c.Model
	m.VocabSize = max(m.VocabSize, m.BOSTokenID+1, m.EOSTokenID+1) // the tokenizer sets it later
	return m.Validate()
}

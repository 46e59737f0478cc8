// Package pretrain runs the zoo's pretraining pipelines (config → run):
// GPT's causal LM on a text corpus (`zoo pretrain gpt`, RunGPT; init_from
// makes it LM fine-tuning), BERT's masked LM and next-sentence prediction
// (RunBERT, EvalBERT), ViT's masked autoencoding (RunViTMAE) and seq2seq
// denoising (RunSeq2Seq). It holds the objectives they train, which the
// model packages do not: GPT's (gpt_task.go), BERT's (bert_task.go, with
// its data in bert_data.go), ViT's masked autoencoding (vit_mae_task.go)
// and seq2seq's (seq2seq_task.go, with its length-bucketed data in
// seq2seq_data.go), each a train.Task and a train.Data; and seq2seq's run
// skeleton (seq2seq_train.go: Seq2SeqTrainConfig, SetupSeq2SeqContext,
// TrainSeq2Seq), which translation fine-tuning (package finetune) builds
// on. finetune may import pretrain; pretrain never imports finetune.
package pretrain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/d73a19ff/zoo/internal/goroot"
	"github.com/d73a19ff/zoo/models/gpt"
)

// GPTConfig is the configuration of GPT pretraining. Its JSON names follow
// nanoGPT's train.py; the model section is a Hugging Face GPT-2 config.
type GPTConfig struct {
	Corpus      string     `json:"corpus"`         // file, directory or glob; empty: Opticks from the Go toolchain
	Tokenizer   string     `json:"tokenizer"`      // "char", "bpe", or the path of a tokenizer.json
	BPEVocab    int        `json:"bpe_vocab_size"` // with "bpe"
	Model       gpt.Config `json:"model"`          // vocab_size comes from the tokenizer, n_positions is the block size
	Batch       int        `json:"batch_size"`
	Accumulate  int        `json:"gradient_accumulation_steps"`
	MaxIters    int        `json:"max_iters"`
	LR          float64    `json:"learning_rate"`
	MinLR       float64    `json:"min_lr"`
	Warmup      int        `json:"warmup_iters"`
	WeightDecay float64    `json:"weight_decay"`
	Beta1       float64    `json:"beta1"`
	Beta2       float64    `json:"beta2"`
	GradClip    float64    `json:"grad_clip"`
	EvalEvery   int        `json:"eval_interval"`
	SaveEvery   int        `json:"save_interval"`
	ValFraction float64    `json:"val_fraction"`
	Seed        uint64     `json:"seed"`
	RunDir      string     `json:"run_dir"`
	CacheDir    string     `json:"cache_dir"`     // token cache; empty: <run_dir>/../cache
	Samples     int        `json:"samples"`       // samples printed at the end
	SampleLen   int        `json:"sample_tokens"` // tokens per sample
	Resume      bool       `json:"resume"`        // continue from the run directory's latest checkpoint
	InitFrom    string     `json:"init_from"`     // start from this checkpoint (model, config, tokenizer): LM fine-tuning
	// Force resumes even when the corpus, tokenizer settings or model
	// config given now differ from the run's (run_dir/run.json): the
	// checkpoint's tokenizer and model config are used, and the
	// differences are printed.
	Force bool `json:"force"`
	// Overwrite starts a new run in a run directory that holds one: the old
	// run is moved aside to <run_dir>.old-<UTC time>, never deleted.
	// Without it (or resume) such a directory is refused.
	Overwrite bool `json:"overwrite"`
	// LoadBestModelAtEnd loads checkpoints/best (the lowest validation
	// loss) into the model when training ends, as Hugging Face's
	// load_best_model_at_end: the result's validation numbers and the
	// samples are the best's. checkpoints/final keeps the last step's
	// weights.
	LoadBestModelAtEnd bool `json:"load_best_model_at_end"`
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
		Batch: 12, Accumulate: 1, MaxIters: 2000, LR: 1e-3, MinLR: 1e-4, Warmup: 100,
		WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.99, GradClip: 1, EvalEvery: 250, SaveEvery: 500,
		ValFraction: 0.1, Seed: 1337, RunDir: filepath.Join("runs", "gpt-opticks"),
		Samples: 2, SampleLen: 200,
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
	b, err := os.ReadFile(path)
	if err != nil {
		return base, fmt.Errorf("config: %w", err)
	}
	cfg, err := DecodeGPTConfig(b, base)
	if err != nil {
		return base, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Validate reports settings that cannot run.
func (c GPTConfig) Validate() error {
	switch {
	case c.Batch <= 0 || c.MaxIters <= 0 || c.Accumulate <= 0:
		return fmt.Errorf("config: batch_size %d, max_iters %d and gradient_accumulation_steps %d must be positive", c.Batch, c.MaxIters, c.Accumulate)
	case !(c.ValFraction > 0 && c.ValFraction < 1):
		return fmt.Errorf("config: val_fraction %g must be in (0, 1)", c.ValFraction)
	case c.RunDir == "":
		return fmt.Errorf("config: run_dir is empty")
	case c.Tokenizer == "bpe" && c.BPEVocab < 260:
		return fmt.Errorf("config: bpe_vocab_size %d must be at least 260 (256 bytes and a few merges)", c.BPEVocab)
	case c.Warmup < 0 || c.Warmup >= c.MaxIters:
		return fmt.Errorf("config: warmup_iters %d must be in [0, max_iters %d): lower --warmup-steps", c.Warmup, c.MaxIters)
	case c.Samples < 0 || c.SampleLen < 0:
		return fmt.Errorf("config: samples and sample_tokens must not be negative")
	}
	m := c.Model
	m.VocabSize = max(m.VocabSize, m.BOSTokenID+1, m.EOSTokenID+1) // the tokenizer sets it later
	return m.Validate()
}

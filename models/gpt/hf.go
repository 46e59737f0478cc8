package gpt

// This file is the one place that knows how Hugging Face stores GPT-2.
// Parameter names are already GPT-2's keys; what differs is:
//   - the four projections are Conv1D in GPT-2, weight (in, out), where the
//     zoo's Linear keeps (out, in): they are transposed on load and save;
//   - GPT2Model checkpoints (the hub's "gpt2") have no "transformer." prefix;
//   - older checkpoints carry the causal-mask buffers attn.bias and
//     attn.masked_bias, which are not parameters and are skipped;
//   - a checkpoint of a tied model may or may not include lm_head.weight
//     (it equals wte); it is skipped when tied;
//   - a sequence classifier's head is "score.weight", outside "transformer.".

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// conv1D are the suffixes of the weights GPT-2 stores transposed.
var conv1D = []string{".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"}

// hfKeys maps GPT-2 checkpoint keys to the model's parameter names.
type hfKeys struct{ tied bool }

func isConv1D(name string) bool {
	if !strings.HasPrefix(name, "transformer.h.") {
		return false
	}
	for _, s := range conv1D {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// FromFile implements layers.KeyMap.
func (k hfKeys) FromFile(key string) (name string, transpose, skip bool) {
	if strings.HasSuffix(key, ".attn.bias") || strings.HasSuffix(key, ".attn.masked_bias") {
		return "", false, true // causal-mask buffers, not parameters
	}
	if key == "lm_head.weight" {
		return key, false, k.tied
	}
	name = key
	for _, p := range []string{"h.", "wte.", "wpe.", "ln_f."} {
		if strings.HasPrefix(key, p) { // a GPT2Model checkpoint: no "transformer." prefix
			name = "transformer." + key
		}
	}
	return name, isConv1D(name), false
}

// ToFile implements layers.KeyMap; it writes what GPT2LMHeadModel's
// save_pretrained writes.
func (k hfKeys) ToFile(name string) (key string, transpose bool) {
	return name, isConv1D(name)
}

// Save writes the model as a Hugging Face GPT-2 checkpoint: dir/config.json
// and dir/model.safetensors in GPT-2's layout and, for a language model,
// dir/generation_config.json (see Config.GenerationConfigJSON: the one the
// model was loaded with, else the one transformers derives from
// config.json), each written atomically. The config's architectures names
// the layout written, GPT2ForSequenceClassification when the model has a
// classifier's score head (which, as in transformers, cannot generate and
// gets no generation_config.json) and GPT2LMHeadModel otherwise; the keys
// in Config.Extra are written as they were read.
func (m *Model) Save(dir string) error {
	if err := m.Config.checkExtra(); err != nil {
		return fmt.Errorf("gpt: save: %w", err)
	}
	arch := archLM
	if _, ok := m.Store.Param("score.weight"); ok {
		arch = archClassifier
	}
	if arch == archLM {
		if _, err := m.Config.GenerationConfigJSON(); err != nil {
			return fmt.Errorf("gpt: %w", err) // before anything is written
		}
	}
	if err := models.SaveModel(dir, codec.Saved(m.Config, arch), m.Store, hfKeys{tied: m.LMHead == nil}); err != nil {
		return fmt.Errorf("gpt: %w", err)
	}
	if arch == archLM {
		if err := m.Config.writeGenerationConfig(dir); err != nil {
			return fmt.Errorf("gpt: %w", err)
		}
	}
	return nil
}

// LoadReport says how a checkpoint was fitted to a model
// (models.LoadReport, the one report type of every family).
type LoadReport = models.LoadReport

// The Load functions all have one shape, every family's (see
// models.LoadOption): LoadX(dir, opts...) (*X, LoadReport, error). Options
// are layers.Options for the store (dtype, seed), models.Strict and, for
// the classifier, models.WithLabels. Without Strict a checkpoint of the
// other head loads: the file's head tensors the model lacks (a
// classifier's score.weight, an untied lm_head.weight) are dropped and the
// model's head parameters the file lacks are created, both reported; the
// backbone (transformer.*) must fit either way.

// Load reads a GPT-2 checkpoint directory (config.json,
// model.safetensors and, if there is one, generation_config.json, which
// Config.GenerationConfig keeps unless it is the one Save derives from
// config.json), ours or Hugging Face's, into a new model. Keys or
// shapes of the backbone that do not fit the config are all reported by
// name in a *layers.LoadError.
func Load(dir string, opts ...models.LoadOption) (*Model, LoadReport, error) {
	return LoadEdited(dir, nil, opts...)
}

// LoadEdited is Load with edit applied to the checkpoint's config before
// the model is built (nil: none): settings that do not change the weights'
// shapes, such as dropout rates when fine-tuning.
func LoadEdited(dir string, edit func(*Config) error, opts ...models.LoadOption) (*Model, LoadReport, error) {
	s := models.ReadLoadOptions(opts)
	if err := s.Check("gpt: Load", false); err != nil {
		return nil, LoadReport{}, err
	}
	var cfg Config
	if err := models.ReadConfig(dir, "gpt", &cfg); err != nil {
		return nil, LoadReport{}, fmt.Errorf("gpt: %w", err)
	}
	gen, err := readGenerationConfig(dir, cfg)
	if err != nil {
		return nil, LoadReport{}, err
	}
	cfg.GenerationConfig = gen
	if edit != nil {
		if err := edit(&cfg); err != nil {
			return nil, LoadReport{}, err
		}
	}
	// The checkpoint overwrites the initial values: layers.DeferInit.
	m, err := New(cfg, slices.Concat([]layers.Option{layers.DeferInit()}, s.Store)...)
	if err != nil {
		return nil, LoadReport{}, fmt.Errorf("gpt: %s: %w", filepath.Join(dir, models.ConfigFile), err)
	}
	r, err := m.load(dir, s.Strict, false)
	if err != nil {
		return nil, LoadReport{}, err
	}
	return m, r, nil
}

// load reads dir's weights into m: strictly (LoadWeights), or fitting a
// checkpoint of the other head, newHead dropping the file's classifier.
func (m *Model) load(dir string, strict, newHead bool) (LoadReport, error) {
	path := filepath.Join(dir, models.WeightsFile)
	if strict {
		return LoadReport{}, m.LoadWeights(path)
	}
	var fresh []string
	if newHead {
		fresh = []string{"score.weight"}
	}
	r, err := models.LoadFitted(m.Store, path, hfKeys{tied: m.LMHead == nil}, isBackbone, fresh...)
	if err != nil {
		return LoadReport{}, fmt.Errorf("gpt: %w", err)
	}
	return r, nil
}

// isBackbone says a parameter is the backbone's, which every checkpoint
// of the family holds (models.LoadFitted).
func isBackbone(name string) bool { return strings.HasPrefix(name, "transformer.") }

// LoadWeights reads GPT-2 weights from a safetensors file into the model.
func (m *Model) LoadWeights(path string) error {
	if err := m.Store.LoadMapped(path, hfKeys{tied: m.LMHead == nil}); err != nil {
		return fmt.Errorf("gpt: %w", err)
	}
	return nil
}

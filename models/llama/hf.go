package llama

// This file is the one place that knows how Hugging Face stores the
// LLaMA-style decoders. Parameter names are already Hugging Face's
// (model.embed_tokens.weight, model.layers.N.self_attn.{q,k,v,o}_proj.
// {weight,bias}, model.layers.N.mlp.{gate,up,down}_proj.{weight,bias},
// model.layers.N.{input,post_attention}_layernorm.weight,
// model.norm.weight, lm_head.weight, score.weight), each Linear's weight
// (out, in) as torch.nn.Linear holds it; what differs is only that a tied
// model's checkpoint may or may not hold lm_head.weight (equal to
// embed_tokens): it is skipped on load and not written.

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// hfKeys maps checkpoint keys to the model's parameter names.
type hfKeys struct{ tied bool }

// FromFile implements layers.KeyMap.
func (k hfKeys) FromFile(key string) (name string, transpose, skip bool) {
	if key == "lm_head.weight" {
		return key, false, k.tied
	}
	if strings.HasSuffix(key, ".rotary_emb.inv_freq") {
		return "", false, true // a buffer older transformers saved, recomputed from the config
	}
	return key, false, false
}

// ToFile implements layers.KeyMap: the names are Hugging Face's.
func (hfKeys) ToFile(name string) (key string, transpose bool) { return name, false }

// LoadReport says how a checkpoint was fitted to a model
// (models.LoadReport, the one report type of every family).
type LoadReport = models.LoadReport

// save writes m's config and store in Hugging Face's layout.
func (m *Model) save(dir string, tied bool) error {
	if err := models.SaveModel(dir, m.Config, m.Store, hfKeys{tied: tied}); err != nil {
		return fmt.Errorf("llama: %w", err)
	}
	return nil
}

// Save writes the model as a Hugging Face checkpoint: dir/config.json
// (architectures LlamaForCausalLM, Qwen2ForCausalLM or
// MistralForCausalLM) and dir/model.safetensors under Hugging Face's
// names, each written atomically; a tied model writes no lm_head.weight,
// as save_pretrained does.
// A model loaded with weights in a reduced format is refused.
func (m *ForCausalLM) Save(dir string) error {
	if m.weights != "" && m.weights != models.WeightsF32 {
		return fmt.Errorf("llama: save %s: the model's weights are in %s, for inference only: save the float32 model", dir, m.weights)
	}
	return m.save(dir, m.LMHead == nil)
}

// The Load functions all have one shape, every family's (see
// models.LoadOption): LoadX(dir, opts...) (*X, LoadReport, error). Options
// are layers.Options for the store (dtype, seed), models.Strict and, for
// the classifier, models.WithLabels. Without Strict a checkpoint of the
// other head loads: the file's head tensors the model lacks (a
// classifier's score.weight, an untied lm_head.weight) are dropped and the
// model's head parameters the file lacks are created, both reported; the
// backbone (model.*) must fit either way. Sharded checkpoints
// (model.safetensors.index.json) and bf16 or f16 tensors are read as
// layers.Store.Load reads them.

// LoadForCausalLM reads a checkpoint directory (config.json and
// model.safetensors) of model_type llama, qwen2 or mistral, ours or
// Hugging Face's, into a new causal LM. Keys or shapes of the backbone
// that do not fit the config are all reported by name in a
// *layers.LoadError. models.WithWeightFormat(models.WeightsBF16 or
// models.WeightsInt8) converts every weight matrix (the projections, the
// embedding, the LM head) for inference (see ForCausalLM.WeightFormat),
// each as it is read, so that the whole float32 model is never in memory
// (models.LoadReducer). The model is built with layers.DeferInit: the
// checkpoint's tensors are not drawn at random first.
func LoadForCausalLM(dir string, opts ...models.LoadOption) (*ForCausalLM, LoadReport, error) {
	s := models.ReadLoadOptions(opts)
	weights := s.TakeWeights()
	if _, err := weights.Reduced(); err != nil {
		return nil, LoadReport{}, fmt.Errorf("llama: LoadForCausalLM: %w", err)
	}
	if err := s.Check("llama: LoadForCausalLM", false); err != nil {
		return nil, LoadReport{}, err
	}
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, LoadReport{}, fmt.Errorf("llama: %w", err)
	}
	cfg.ID2Label = nil // a classifier's labels: not this model's
	// The checkpoint overwrites the initial values (DeferInit), and a
	// reduced format converts each weight as it is read.
	m, err := NewForCausalLM(cfg, slices.Concat([]layers.Option{layers.DeferInit()}, s.Store)...)
	if err != nil {
		return nil, LoadReport{}, fmt.Errorf("llama: %s: %w", filepath.Join(dir, models.ConfigFile), err)
	}
	red, err := m.loadReducer(weights)
	if err != nil {
		return nil, LoadReport{}, err
	}
	var each func(*layers.Param) error
	if red != nil {
		each = red.Loaded
	}
	r, err := m.load(dir, m.LMHead == nil, s.Strict, false, each)
	if err != nil {
		return nil, LoadReport{}, err
	}
	if red != nil {
		if err := red.Finish(); err != nil {
			return nil, LoadReport{}, err
		}
		m.weights = weights
	}
	return m, r, nil
}

// LoadWeights reads weights under Hugging Face's names from a safetensors
// file (or a sharded checkpoint's index) into the model, strictly.
func (m *ForCausalLM) LoadWeights(path string) error {
	return m.loadWeights(path, m.LMHead == nil)
}

func (m *Model) loadWeights(path string, tied bool) error {
	return m.loadWeightsEach(path, tied, nil)
}

// loadWeightsEach is loadWeights calling each with every parameter as it
// is read (layers.Store.LoadEach).
func (m *Model) loadWeightsEach(path string, tied bool, each func(*layers.Param) error) error {
	if err := m.Store.LoadEach(path, hfKeys{tied: tied}, each); err != nil {
		return fmt.Errorf("llama: %w", err)
	}
	return nil
}

// load reads dir's weights into m: strictly (loadWeights), or fitting a
// checkpoint of the other head, newHead dropping the file's classifier;
// each, when not nil, is called with every parameter as it is read.
func (m *Model) load(dir string, tied, strict, newHead bool, each func(*layers.Param) error) (LoadReport, error) {
	path := filepath.Join(dir, models.WeightsFile)
	if strict {
		return LoadReport{}, m.loadWeightsEach(path, tied, each)
	}
	var fresh []string
	if newHead {
		fresh = []string{"score.weight"}
	}
	r, err := models.LoadFittedEach(m.Store, path, hfKeys{tied: tied}, isBackbone, each, fresh...)
	if err != nil {
		return LoadReport{}, fmt.Errorf("llama: %w", err)
	}
	return r, nil
}

// isBackbone says a parameter is the backbone's, which every checkpoint
// of the family holds (models.LoadFitted).
func isBackbone(name string) bool { return strings.HasPrefix(name, "model.") }

// Save writes the classifier as a Hugging Face checkpoint:
// dir/config.json with its id2label (architectures
// LlamaForSequenceClassification, …) and dir/model.safetensors, backbone
// and score.weight, each written atomically.
func (c *ForSequenceClassification) Save(dir string) error { return c.save(dir, false) }

// LoadWeights reads a classifier's weights (a model.safetensors written
// by Save or by transformers) into the model, strictly.
func (c *ForSequenceClassification) LoadWeights(path string) error {
	return c.loadWeights(path, false)
}

// LoadForSequenceClassification reads a checkpoint into a sequence
// classifier (see LoadForCausalLM for the options). Its labels are
// config.json's id2label; with none, a config whose architectures is a
// …ForSequenceClassification has transformers' default of 2 labels. A
// language model's checkpoint has none: give the labels of a new head
// with models.WithLabels (the report then names score.weight as created
// and sets NewHead; labels equal to a classifier checkpoint's keep its
// head). The LM head of a causal LM's checkpoint is dropped and reported.
func LoadForSequenceClassification(dir string, opts ...models.LoadOption) (*ForSequenceClassification, LoadReport, error) {
	s := models.ReadLoadOptions(opts)
	if err := s.Check("llama: LoadForSequenceClassification", true); err != nil {
		return nil, LoadReport{}, err
	}
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, LoadReport{}, fmt.Errorf("llama: %w", err)
	}
	if len(cfg.ID2Label) == 0 {
		var arch struct {
			Architectures []string `json:"architectures"`
		}
		if err := layers.ReadConfig(dir, &arch); err != nil {
			return nil, LoadReport{}, fmt.Errorf("llama: %w", err)
		}
		if slices.Contains(arch.Architectures, archPrefix[cfg.ModelType]+archClassifier) {
			cfg.ID2Label = map[string]string{"0": "LABEL_0", "1": "LABEL_1"}
		}
	}
	saved, err := cfg.Labels()
	if err != nil && s.Labels == nil {
		return nil, LoadReport{}, fmt.Errorf("llama: %s: %w", filepath.Join(dir, models.ConfigFile), err)
	}
	labels, newHead, err := s.HeadLabels(dir, saved, "a sequence classifier (and its architectures are not "+archPrefix[cfg.ModelType]+archClassifier+")")
	if err != nil {
		return nil, LoadReport{}, fmt.Errorf("llama: %w", err)
	}
	c, err := NewForSequenceClassification(cfg, labels, slices.Concat([]layers.Option{layers.DeferInit()}, s.Store)...)
	if err != nil {
		return nil, LoadReport{}, err
	}
	r, err := c.load(dir, false, s.Strict, newHead, nil)
	if err != nil {
		return nil, LoadReport{}, err
	}
	r.NewHead = newHead
	return c, r, nil
}

// Labels are the class names of id2label by id: its keys must be "0" to
// "n-1", each once. A config without id2label has none (nil).
func (c Config) Labels() ([]string, error) { return models.Labels(c.ID2Label, c.family()) }

// setLabels records labels in c's id2label.
func (c *Config) setLabels(labels []string) {
	c.ID2Label = map[string]string{}
	for i, l := range labels {
		c.ID2Label[strconv.Itoa(i)] = l
	}
}

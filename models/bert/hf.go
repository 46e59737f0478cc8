package bert

// This file is the one place that knows how Hugging Face stores BERT.
// Parameter names are already transformers' keys; what differs is:
//   - BertModel checkpoints (the bare backbone) have no "bert." prefix;
//   - older checkpoints name LayerNorm parameters gamma and beta;
//   - checkpoints carry the buffers embeddings.position_ids (and
//     token_type_ids), which are not parameters and are skipped;
//   - the MLM decoder is tied: cls.predictions.decoder.weight, when
//     present, must equal the word embeddings, and
//     cls.predictions.decoder.bias is cls.predictions.bias;
//   - a checkpoint of one head loads into another: the file's head tensors
//     the model lacks are dropped and the model's head tensors the file
//     lacks keep their initial values, and both are reported (LoadReport);
//   - BertForTokenClassification and BertForQuestionAnswering have no
//     pooler (add_pooling_layer=False): a file's bert.pooler.* (zoo wrote
//     them before it followed this) load into these heads dropped and
//     reported, even when loading strictly.
//
// RoBERTa (variant.go) differs only in names: "roberta." for "bert.",
// lm_head.dense, lm_head.layer_norm and lm_head.bias for the masked-LM
// head, whose tied decoder is lm_head.decoder.weight (and .bias), and
// classifier.dense and classifier.out_proj; none of its heads has a pooler.
// DistilBERT (distilbert.go) has its own names throughout: "distilbert."
// with distilbert.transformer.layer.N (a DistilBertModel checkpoint:
// embeddings.* and transformer.*), vocab_transform, vocab_layer_norm and
// vocab_projector (its weight tied, its bias the head's), pre_classifier;
// no token types and no pooler.

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// LoadReport says how a checkpoint of another head was fitted to a model
// (models.LoadReport, the one report type of every family).
type LoadReport = models.LoadReport

// hfKeys maps BERT checkpoint keys to the model's parameter names.
type hfKeys struct {
	store *layers.Store
	v     *variant
	// heads lets a checkpoint of another head load (see LoadReport);
	// otherwise every head tensor must match, as when resuming.
	heads bool
	// newHead drops the checkpoint's classifier: the model's is new.
	newHead bool
	seen    map[string]bool // parameter names the file provides
	dropped []string
}

func (k *hfKeys) isBackbone(name string) bool { return strings.HasPrefix(name, k.v.prefix+".") }

// isClassifier reports whether name is a classifier's, which a new head
// replaces: classifier.*, and DistilBERT's pre_classifier.*.
func (k *hfKeys) isClassifier(name string) bool {
	return strings.HasPrefix(name, "classifier.") || k.v.cls != nil && strings.HasPrefix(name, k.v.cls.dense+".")
}

// newKeys is the key map of m's store and model type.
func (m *Model) newKeys(heads, newHead bool) *hfKeys {
	return &hfKeys{store: m.Store, v: m.Config.variant(), heads: heads, newHead: newHead}
}

// FromFile implements layers.KeyMap.
func (k *hfKeys) FromFile(key string) (name string, transpose, skip bool) {
	if strings.HasSuffix(key, "embeddings.position_ids") || strings.HasSuffix(key, "embeddings.token_type_ids") {
		return "", false, true // buffers, not parameters
	}
	name = key
	for _, p := range []string{"embeddings.", k.v.encoder + ".", "pooler.", "embeddings_project."} {
		if strings.HasPrefix(key, p) { // a BertModel checkpoint: no "bert." prefix
			name = k.v.prefix + "." + key
		}
	}
	if strings.Contains(name, ".LayerNorm.") { // older checkpoints: gamma and beta
		if n, ok := strings.CutSuffix(name, ".gamma"); ok {
			name = n + ".weight"
		} else if n, ok := strings.CutSuffix(name, ".beta"); ok {
			name = n + ".bias"
		}
	}
	switch name {
	case k.v.mlm.decoderWeight:
		name = k.v.prefix + ".embeddings.word_embeddings.weight" // tied; must be equal
		if _, ok := k.store.Param(k.v.mlm.bias); !ok && k.heads {
			k.dropped = append(k.dropped, key)
			return "", false, true
		}
		return name, false, false
	case k.v.mlm.decoderBias:
		name = k.v.mlm.bias
	}
	if _, ok := k.store.Param(name); !ok && strings.HasPrefix(name, k.v.prefix+".pooler.") {
		k.dropped = append(k.dropped, key) // the model is a head without a pooler
		return "", false, true
	}
	if _, ok := k.store.Param(name); (!ok || k.newHead && k.isClassifier(name)) && k.heads && !k.isBackbone(name) {
		k.dropped = append(k.dropped, key)
		return "", false, true
	}
	if k.seen != nil {
		k.seen[name] = true
	}
	return name, false, false
}

// ToFile implements layers.KeyMap: the keys are the parameter names, as
// BertFor*'s save_pretrained writes them (the tied decoder is not
// written, as safetensors de-duplicates it).
func (k *hfKeys) ToFile(name string) (key string, transpose bool) { return name, false }

// Optional implements layers.OptionalKeys: when fitting another head, the
// model's head parameters may be absent, and so may the pooler
// (transformers' BertForMaskedLM has none).
func (k *hfKeys) Optional(name string) bool {
	return k.heads && (!k.isBackbone(name) || strings.HasPrefix(name, k.v.prefix+".pooler."))
}

// load reads path into the store through k and reports what was fitted.
func (k *hfKeys) load(path string) (LoadReport, error) {
	k.seen = map[string]bool{}
	if err := k.store.LoadMapped(path, k); err != nil {
		return LoadReport{}, fmt.Errorf("bert: %w", err)
	}
	var r LoadReport
	for _, p := range k.store.Params() {
		if !k.seen[p.Name] {
			r.Created = append(r.Created, p.Name)
		}
	}
	r.Dropped = slices.Clone(k.dropped)
	sort.Strings(r.Dropped)
	return r, nil
}

// architecture is transformers' class for the model's heads.
func (m *Model) architecture() string {
	v := m.Config.variant()
	if m.arch != "" {
		return v.arch(m.arch)
	}
	s := m.Store
	_, mlm := s.Param(v.mlm.bias)
	_, nsp := s.Param(v.pair + ".weight")
	_, cl := s.Param("classifier.weight")
	_, dense := s.Param("classifier.out_proj.weight")
	switch {
	case cl || dense:
		return v.arch(archClassifier)
	case mlm && nsp:
		return v.arch(archPreTraining)
	case mlm:
		return v.arch(archMaskedLM)
	}
	return v.arch(archModel)
}

// Save writes the model, with whatever heads its store holds, as a
// Hugging Face BERT checkpoint: dir/config.json (architectures naming the
// head class) and dir/model.safetensors, each written atomically.
func (m *Model) Save(dir string) error {
	if err := m.Config.checkExtra(); err != nil {
		return fmt.Errorf("bert: save: %w", err)
	}
	if err := models.SaveModel(dir, m.Config.variant().codec.Saved(m.Config, m.architecture()), m.Store, m.newKeys(false, false)); err != nil {
		return fmt.Errorf("bert: %w", err)
	}
	return nil
}

// LoadWeights reads a model.safetensors written by Save (or by
// transformers for the same head) into the model, strictly: every
// parameter must be in the file and every tensor must fit. The one
// exception: a model without a pooler (a token classifier or QA model)
// ignores a file's bert.pooler.* (see LoadReport, which the Load
// functions return).
func (m *Model) LoadWeights(path string) error {
	_, err := m.loadStrict(path)
	return err
}

// loadStrict is LoadWeights, reporting the pooler tensors it dropped.
func (m *Model) loadStrict(path string) (LoadReport, error) {
	return m.newKeys(false, false).load(path)
}

// loadHeads reads dir's weights into m, fitting another head's checkpoint
// unless strict.
func (m *Model) loadHeads(dir string, strict bool) (LoadReport, error) {
	return m.newKeys(!strict, false).load(filepath.Join(dir, models.WeightsFile))
}

// checkClassifierKind refuses a checkpoint whose architectures name the
// other classifier: sequence and token classifiers both call their head
// "classifier", with the same shape, so one would load as the other.
func checkClassifierKind(dir string, cfg Config, want string) error {
	var a struct {
		Architectures []string `json:"architectures"`
	}
	if err := layers.ReadConfig(dir, &a); err != nil {
		return fmt.Errorf("bert: %w", err)
	}
	v := cfg.variant()
	want = v.arch(want)
	for _, got := range a.Architectures {
		if (got == v.arch(archClassifier) || got == v.arch(archTokenClassifier)) && got != want {
			return fmt.Errorf("bert: %s is a %s checkpoint; its classifier is not a %s's: load it with its own head, or a checkpoint without a classifier",
				filepath.Join(dir, models.ConfigFile), got, want)
		}
	}
	return nil
}

func readConfig(dir string) (Config, error) {
	var cfg Config
	if err := models.ReadConfig(dir, "bert", &cfg); err != nil {
		return cfg, fmt.Errorf("bert: %w", err)
	}
	return cfg, nil
}

// The Load functions all have one shape, every family's (see
// models.LoadOption): LoadX(dir, opts...) (*X, LoadReport, error). Options
// are layers.Options for the store (dtype, seed), models.Strict and, for
// the classifiers, models.WithLabels. Without Strict a checkpoint of any
// head loads: the file's head tensors the model lacks are dropped and the
// model's head parameters the file lacks are created, both reported.

// Load reads the backbone of a BERT checkpoint directory, ours or Hugging
// Face's, of any head; the head tensors are dropped and listed in the
// report.
func Load(dir string, opts ...models.LoadOption) (*Model, LoadReport, error) {
	return loadAs(dir, "Load", opts, func(c Config, s []layers.Option) (*Model, error) { return New(c, s...) })
}

// loadAs reads dir's config, builds the model with build and loads what of
// the checkpoint fits it (all of it, strictly, with models.Strict),
// reporting the head tensors dropped and created.
func loadAs[T interface {
	loadHeads(string, bool) (LoadReport, error)
}](dir, where string, opts []models.LoadOption, build func(Config, []layers.Option) (T, error)) (T, LoadReport, error) {
	var zero T
	s := models.ReadLoadOptions(opts)
	if err := s.Check("bert: "+where, false); err != nil {
		return zero, LoadReport{}, err
	}
	cfg, err := readConfig(dir)
	if err != nil {
		return zero, LoadReport{}, err
	}
	m, err := build(cfg, s.Store)
	if err != nil {
		return zero, LoadReport{}, err
	}
	r, err := m.loadHeads(dir, s.Strict)
	if err != nil {
		return zero, LoadReport{}, err
	}
	return m, r, nil
}

// LoadForPreTraining reads a checkpoint into a BertForPreTraining; heads
// the checkpoint lacks are created (see LoadReport).
func LoadForPreTraining(dir string, opts ...models.LoadOption) (*ForPreTraining, LoadReport, error) {
	return loadAs(dir, "LoadForPreTraining", opts, func(c Config, s []layers.Option) (*ForPreTraining, error) { return NewForPreTraining(c, s...) })
}

// LoadForMaskedLM reads a checkpoint into a BertForMaskedLM.
func LoadForMaskedLM(dir string, opts ...models.LoadOption) (*ForMaskedLM, LoadReport, error) {
	return loadAs(dir, "LoadForMaskedLM", opts, func(c Config, s []layers.Option) (*ForMaskedLM, error) { return NewForMaskedLM(c, s...) })
}

// loadClassifier reads dir into a classifier of kind arch (archClassifier
// or archTokenClassifier) built by build for the labels opts give
// (models.WithLabels; else config.json's id2label, and none is an error
// saying the checkpoint is not what).
func loadClassifier[T any](dir, where, arch, what string, opts []models.LoadOption, build func(*Model, []string) (T, error)) (T, LoadReport, error) {
	var zero T
	s := models.ReadLoadOptions(opts)
	if err := s.Check("bert: "+where, true); err != nil {
		return zero, LoadReport{}, err
	}
	cfg, err := readConfig(dir)
	if err != nil {
		return zero, LoadReport{}, err
	}
	if err := checkClassifierKind(dir, cfg, arch); err != nil {
		return zero, LoadReport{}, err
	}
	saved, err := cfg.Labels()
	if err != nil && s.Labels == nil { // with labels given, a broken id2label is replaced
		return zero, LoadReport{}, fmt.Errorf("bert: %s: %w", filepath.Join(dir, models.ConfigFile), err)
	}
	labels, newHead, err := s.HeadLabels(dir, saved, what)
	if err != nil {
		return zero, LoadReport{}, fmt.Errorf("bert: %w", err)
	}
	m, err := New(cfg, s.Store...)
	if err != nil {
		return zero, LoadReport{}, err
	}
	c, err := build(m, labels)
	if err != nil {
		return zero, LoadReport{}, err
	}
	var r LoadReport
	if s.Strict {
		r, err = m.loadStrict(filepath.Join(dir, models.WeightsFile))
	} else {
		r, err = m.newKeys(true, newHead).load(filepath.Join(dir, models.WeightsFile))
	}
	if err != nil {
		return zero, LoadReport{}, err
	}
	r.NewHead = newHead
	return c, r, nil
}

// LoadForSequenceClassification reads a checkpoint of any head but a
// token classifier into a sequence classifier. Its labels are
// config.json's id2label, or models.WithLabels' for a new head (a
// pretraining checkpoint's MLM and NSP heads are then dropped and a new
// classifier created, and the report's NewHead is set).
func LoadForSequenceClassification(dir string, opts ...models.LoadOption) (*ForSequenceClassification, LoadReport, error) {
	return loadClassifier(dir, "LoadForSequenceClassification", archClassifier, "a sequence classifier", opts, NewForSequenceClassification)
}

// LoadClassifier reads a sequence classifier checkpoint (Save's, or
// transformers' BertForSequenceClassification) with the labels of its
// config.json's id2label, strictly.
//
// Deprecated: use LoadForSequenceClassification(dir, models.Strict()),
// which also returns the report.
func LoadClassifier(dir string, opts ...layers.Option) (*ForSequenceClassification, error) {
	c, _, err := LoadForSequenceClassification(dir, storeOptions(opts, models.Strict())...)
	return c, err
}

// storeOptions is opts as load options, then more.
func storeOptions(opts []layers.Option, more ...models.LoadOption) []models.LoadOption {
	out := make([]models.LoadOption, 0, len(opts)+len(more))
	for _, o := range opts {
		out = append(out, o)
	}
	return append(out, more...)
}

// LoadForTokenClassification reads a checkpoint of any head but a sequence
// classifier into a token classifier. Its tags are config.json's id2label
// (a token classifier checkpoint, Save's or transformers'
// BertForTokenClassification), or models.WithLabels' for a new head on a
// pretrained backbone (the report's NewHead is set). The model has no
// pooler, so a checkpoint's bert.pooler.* (zoo wrote them before it
// followed transformers) are dropped and reported, even with
// models.Strict.
func LoadForTokenClassification(dir string, opts ...models.LoadOption) (*ForTokenClassification, LoadReport, error) {
	return loadClassifier(dir, "LoadForTokenClassification", archTokenClassifier,
		"a token classifier (fine-tune one with zoo finetune bert --task tokens)", opts, NewForTokenClassification)
}

// LoadForQuestionAnswering reads a checkpoint of any head into an
// extractive question-answering model (see LoadReport). The model has no
// pooler, so a checkpoint's bert.pooler.* are dropped and reported; a
// checkpoint written by transformers' BertForQuestionAnswering has none
// and loads with nothing dropped or created.
func LoadForQuestionAnswering(dir string, opts ...models.LoadOption) (*ForQuestionAnswering, LoadReport, error) {
	return loadAs(dir, "LoadForQuestionAnswering", opts, func(c Config, s []layers.Option) (*ForQuestionAnswering, error) {
		m, err := New(c, s...)
		if err != nil {
			return nil, err
		}
		return NewForQuestionAnswering(m)
	})
}

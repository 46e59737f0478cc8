package models

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Family is a model family as the checkpoint bundle and the shared
// pipelines see it. Each family package registers one in its init, so that
// importing the package is enough for a checkpoint of that family to be
// recognised.
type Family struct {
	// Name is the family's name in the CLI and in messages: "gpt".
	Name string
	// ModelTypes are the config.json model_type values the family reads;
	// the first is the one it writes ("gpt2"). Later ones are older
	// spellings it still reads.
	ModelTypes []string
	// NewClassifier puts a new classification head for labels on the
	// backbone of a checkpoint of this family (a pretrained model, or a
	// classifier whose head is replaced). Nil: the family cannot classify.
	NewClassifier func(dir string, labels []string) (Classifier, error)
	// ScratchClassifier builds a classifier for labels with the
	// architecture of a checkpoint of this family (its config.json) and
	// freshly initialised weights, seeded: the baseline that measures what
	// pretraining gained. Nil: the family has no untrained classifier.
	ScratchClassifier func(dir string, labels []string, seed uint64) (Classifier, error)
	// LoadClassifier reads a fine-tuned classifier checkpoint. Nil: as
	// NewClassifier.
	LoadClassifier func(dir string) (Classifier, error)
	// Describe summarises a checkpoint of the family in one line (sizes,
	// head), for zoo inspect. Nil: nothing beyond the bundle's own report.
	Describe func(dir string) (string, error)
}

var registry struct {
	sync.RWMutex
	byName map[string]Family
	byType map[string]string
}

// Register adds a family. It panics on a family without a name or model
// type, or one whose name or model type is taken: both are programming
// errors, found at start-up.
func Register(f Family) {
	registry.Lock()
	defer registry.Unlock()
	if registry.byName == nil {
		registry.byName, registry.byType = map[string]Family{}, map[string]string{}
	}
	if f.Name == "" || len(f.ModelTypes) == 0 {
		panic("models: Register: a family needs a name and a model type")
	}
	if _, ok := registry.byName[f.Name]; ok {
		panic("models: Register: family " + f.Name + " registered twice")
	}
	for _, t := range f.ModelTypes {
		if other, ok := registry.byType[t]; ok {
			panic("models: Register: model_type " + t + " is registered by " + other + " and " + f.Name)
		}
		registry.byType[t] = f.Name
	}
	registry.byName[f.Name] = f
}

// Families lists the registered families by name.
func Families() []Family {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]Family, 0, len(registry.byName))
	for _, f := range registry.byName {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Lookup finds a family by name; an unknown name is an error that lists
// the known ones.
func Lookup(name string) (Family, error) {
	registry.RLock()
	f, ok := registry.byName[name]
	registry.RUnlock()
	if !ok {
		return Family{}, fmt.Errorf("unknown model family %q; known families: %s", name, strings.Join(familyNames(), ", "))
	}
	return f, nil
}

// ForModelType finds the family that reads a config.json model_type; an
// unknown model type is an error that lists the known ones.
func ForModelType(modelType string) (Family, error) {
	registry.RLock()
	name, ok := registry.byType[modelType]
	f := registry.byName[name]
	registry.RUnlock()
	if !ok {
		return Family{}, fmt.Errorf("model_type %q is not one zoo knows; known model types: %s", modelType, strings.Join(KnownModelTypes(), ", "))
	}
	return f, nil
}

// KnownModelTypes lists every registered model_type, each with its family:
// "gpt2 (gpt)".
func KnownModelTypes() []string {
	var out []string
	for _, f := range Families() {
		for _, t := range f.ModelTypes {
			out = append(out, fmt.Sprintf("%s (%s)", t, f.Name))
		}
	}
	return out
}

func familyNames() []string {
	var out []string
	for _, f := range Families() {
		out = append(out, f.Name)
	}
	return out
}

package models

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/d73a19ff/zoo/layers"
)

// LoadOption is an option of every family's Load functions, which all have
// one shape:
//
//	LoadX(dir string, opts ...models.LoadOption) (*X, models.LoadReport, error)
//
// Three kinds of value are LoadOptions:
//   - a layers.Option (layers.WithDtype, layers.WithSeed,
//     layers.WithInitStd): passed to the new model's store;
//   - this package's: Strict, WithLabels, WithWeightFormat;
//   - a family's own (vit.WithPooling, vit.WithInterpolation,
//     vit.WithImageSize): the other families refuse them by name.
//
// The one method only marks the kinds; a family reads its options with
// ReadLoadOptions.
type LoadOption interface{ LoadOption() }

// LoadSettings are what a list of LoadOptions asks for (ReadLoadOptions),
// as a family's Load functions read them.
type LoadSettings struct {
	// Store are the options for the new model's store (dtype, seed).
	Store []layers.Option
	// Strict refuses a checkpoint that does not fit the model exactly
	// (Strict).
	Strict bool
	// Labels, when not nil, are the labels of a new classification head
	// (WithLabels).
	Labels []string
	// Family are the options only one family reads, in order.
	Family []LoadOption
	// Weights is the format the model's weights are held in
	// (WithWeightFormat); empty is float32. A family that implements a
	// reduced format takes it (TakeWeights) before Check, which refuses it.
	Weights WeightFormat
}

// loadFunc is this package's kind of LoadOption.
type loadFunc func(*LoadSettings)

// LoadOption implements LoadOption.
func (loadFunc) LoadOption() {}

// Strict makes a Load function read the checkpoint strictly, as resuming
// does: every parameter of the model must be in the file and every tensor
// of the file must be a parameter of the model (a *layers.LoadError names
// them). Without it a Load function fits a checkpoint of another head, as
// transformers' from_pretrained does: the file's tensors of heads the
// model lacks are dropped and the model's head parameters the file lacks
// keep their initial values, both named in the LoadReport (the backbone
// must fit either way). BERT's token classifier and QA model, which have
// no pooler, drop a file's pooler even when strict (see bert.LoadReport).
func Strict() LoadOption { return loadFunc(func(s *LoadSettings) { s.Strict = true }) }

// WithLabels gives a classification loader the labels of its head, by
// class id. Without it the head's labels are the checkpoint's (config.json's
// id2label), and a checkpoint without them is an error. With labels other
// than the checkpoint's (in number, name or order), the head is new: the
// checkpoint's classifier, if any, is dropped and a new one created at its
// initial values, as timm's reset_classifier, and LoadReport.NewHead says
// so. Labels equal to the checkpoint's keep its classifier.
func WithLabels(labels ...string) LoadOption {
	labels = slices.Clone(labels)
	return loadFunc(func(s *LoadSettings) { s.Labels = labels })
}

// ReadLoadOptions sorts opts into LoadSettings: a layers.Option goes to
// Store, this package's options set their fields, and every other option
// (a family's own) is appended to Family. A nil option is skipped.
func ReadLoadOptions(opts []LoadOption) LoadSettings {
	var s LoadSettings
	for _, o := range opts {
		switch o := o.(type) {
		case nil:
		case layers.Option:
			if o != nil {
				s.Store = append(s.Store, o)
			}
		case loadFunc:
			o(&s)
		default:
			s.Family = append(s.Family, o)
		}
	}
	return s
}

// Check refuses what a Load function cannot use: a family's options when
// it reads none (family options are all refused here; a family that reads
// some checks them itself), weights in a reduced format (WithWeightFormat;
// a family that implements one takes it first), and labels when it builds no classification
// head (classifier false). where names the function in the error.
func (s LoadSettings) Check(where string, classifier bool) error {
	if err := s.checkWeights(where); err != nil {
		return err
	}
	if len(s.Family) > 0 {
		return fmt.Errorf("%s: option %T is another family's (a %s option): leave it out", where, s.Family[0], familyOf(s.Family[0]))
	}
	if s.Labels != nil && !classifier {
		return fmt.Errorf("%s: the model has no classification head, so WithLabels has nothing to label: load a classifier, or leave it out", where)
	}
	return nil
}

// familyOf is the package of a family option's type, for messages.
func familyOf(o LoadOption) string {
	t := fmt.Sprintf("%T", o)
	if i := slices.Index([]byte(t), '.'); i > 0 {
		return t[:i]
	}
	return t
}

// HeadLabels picks a classification head's labels for a loader with
// settings s, given saved, the labels of the checkpoint in dir (its
// config.json's id2label; nil: none): WithLabels' labels when given, the
// head new unless they equal saved; else saved. Neither is an error naming
// the config file; what says what the checkpoint is not ("an image
// classifier").
func (s LoadSettings) HeadLabels(dir string, saved []string, what string) (labels []string, newHead bool, err error) {
	if s.Labels != nil {
		newHead = !slices.Equal(s.Labels, saved)
		if newHead && s.Strict {
			return nil, false, fmt.Errorf("%s: WithLabels gives a new head, which cannot load strictly: leave Strict out (the report names the new head) or give the checkpoint's labels", dir)
		}
		return s.Labels, newHead, nil
	}
	if len(saved) == 0 {
		return nil, false, fmt.Errorf("%s has no id2label or num_labels: it is not %s; give the labels of a new head (models.WithLabels)", filepath.Join(dir, ConfigFile), what)
	}
	return saved, false, nil
}

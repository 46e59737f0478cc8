package models

import (
	"slices"
	"sort"

	"github.com/d73a19ff/zoo/layers"
)

// LoadFitted loads the checkpoint file at path into s through km, fitting
// a checkpoint of another head as transformers' from_pretrained does: the
// parameters backbone says are the backbone's must all be in the file
// (and fit); the file's other tensors that s has no parameter for (an
// untied lm_head, another head's classifier) are dropped, so are the
// file's tensors of the parameters named in newHead (a classifier whose
// labels are new), and the model's head parameters the file lacks keep
// their fresh values. The report names what was dropped (by file key) and
// created (by parameter name), each sorted.
func LoadFitted(s *layers.Store, path string, km layers.KeyMap, backbone func(name string) bool, newHead ...string) (LoadReport, error) {
	return LoadFittedEach(s, path, km, backbone, nil, newHead...)
}

// LoadFittedEach is LoadFitted calling loaded with each parameter as soon
// as it holds the file's values (layers.Store.LoadEach).
func LoadFittedEach(s *layers.Store, path string, km layers.KeyMap, backbone func(name string) bool, loaded func(*layers.Param) error, newHead ...string) (LoadReport, error) {
	k := &headFit{KeyMap: km, store: s, backbone: backbone, newHead: newHead, seen: map[string]bool{}}
	if err := s.LoadEach(path, k, loaded); err != nil {
		return LoadReport{}, err
	}
	var r LoadReport
	for _, p := range s.Params() {
		if !k.seen[p.Name] {
			r.Created = append(r.Created, p.Name)
		}
	}
	r.Dropped = slices.Clone(k.dropped)
	sort.Strings(r.Dropped)
	return r, nil
}

// headFit is a family's KeyMap fitting a checkpoint of another head (see
// LoadFitted).
type headFit struct {
	layers.KeyMap
	store    *layers.Store
	backbone func(name string) bool
	newHead  []string
	seen     map[string]bool // parameter names the file provides
	dropped  []string        // file keys dropped
}

// FromFile implements layers.KeyMap.
func (k *headFit) FromFile(key string) (name string, transpose, skip bool) {
	name, transpose, skip = k.KeyMap.FromFile(key)
	if skip {
		return name, transpose, skip
	}
	if _, ok := k.store.Param(name); (!ok || slices.Contains(k.newHead, name)) && !k.backbone(name) {
		k.dropped = append(k.dropped, key)
		return "", false, true
	}
	k.seen[name] = true
	return name, transpose, false
}

// Optional implements layers.OptionalKeys: the model's head parameters may
// be absent from the file.
func (k *headFit) Optional(name string) bool { return !k.backbone(name) }

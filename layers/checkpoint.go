package layers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/internal/ckptfiles"
	"github.com/d73a19ff/zoo/internal/ckptswap"
	"github.com/d73a19ff/zoo/internal/safetensors"
)

// The file names of a checkpoint directory, as Hugging Face names them.
const (
	WeightsFile = ckptfiles.Weights // model.safetensors
	ConfigFile  = ckptfiles.Config  // config.json
)

// KeyMap translates between a store's parameter names and a checkpoint's
// keys, for checkpoints laid out differently from the model (GPT-2 keeps its
// projections transposed, as Conv1D). A nil KeyMap is the identity.
type KeyMap interface {
	// FromFile maps a checkpoint key to a parameter name; transpose marks a
	// 2-D tensor stored transposed; skip marks a tensor to ignore (a buffer).
	FromFile(key string) (name string, transpose, skip bool)
	// ToFile maps a parameter name to its checkpoint key.
	ToFile(name string) (key string, transpose bool)
}

// OptionalKeys is implemented by a KeyMap whose checkpoints may lack some
// tensors (Hugging Face's _keys_to_ignore_on_load_missing): a parameter or
// buffer that it calls optional and the file lacks keeps its value.
type OptionalKeys interface {
	Optional(name string) bool
}

// SkipChecker is implemented by a KeyMap that checks the tensors it skips:
// a buffer that the model computes instead of loading (a sinusoidal position
// table) must hold what the model computes. An error is reported as a
// mismatch of that key.
type SkipChecker interface {
	CheckSkipped(key string, shape []int, values []float64) error
}

// Save writes every parameter and buffer to a safetensors file at path,
// atomically: a crash leaves any previous file at path intact. Tensors are
// written in the store's dtype under their checkpoint keys, with metadata "format": "pt"
// (which Hugging Face's loader expects) plus the given metadata.
func (s *Store) Save(path string, metadata map[string]string) error {
	return s.SaveMapped(path, metadata, nil)
}

// SaveMapped is Save through a KeyMap.
func (s *Store) SaveMapped(path string, metadata map[string]string, km KeyMap) error {
	md := map[string]string{"format": "pt"}
	for k, v := range metadata {
		md[k] = v
	}
	ts := make([]safetensors.Tensor, 0, len(s.params)+len(s.buffers))
	for _, p := range s.all() {
		key, transpose := p.Name, false
		if km != nil {
			key, transpose = km.ToFile(p.Name)
		}
		t, err := toTensor(key, p.Value, transpose)
		if err != nil {
			return fmt.Errorf("save %s: parameter %s: %w", path, p.Name, err)
		}
		ts = append(ts, t)
	}
	if err := safetensors.WriteFile(path, ts, md); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	return nil
}

func toTensor(key string, v *tensor.Dense, transpose bool) (safetensors.Tensor, error) {
	shape := []int(v.Shape().Clone())
	if transpose {
		if len(shape) != 2 {
			return safetensors.Tensor{}, fmt.Errorf("cannot transpose shape %v", shape)
		}
		shape[0], shape[1] = shape[1], shape[0]
	}
	switch d := v.Data().(type) {
	case []float32:
		if transpose {
			d = transposed(d, shape[1], shape[0])
		}
		return safetensors.FromFloat32s(key, shape, d)
	case []float64:
		if transpose {
			d = transposed(d, shape[1], shape[0])
		}
		return safetensors.FromFloat64s(key, shape, d)
	}
	return safetensors.Tensor{}, fmt.Errorf("unsupported data %T", v.Data())
}

// transposed returns the (c, r) transpose of an (r, c) row-major matrix.
func transposed[T any](a []T, r, c int) []T {
	out := make([]T, len(a))
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out[j*r+i] = a[i*c+j]
		}
	}
	return out
}

// LoadError reports, all at once, every way a checkpoint disagrees with the
// model it is loaded into.
type LoadError struct {
	Path       string
	Missing    []string // parameters of the model the file lacks
	Unexpected []string // tensors in the file the model has no parameter for
	Mismatched []string // "name: file (a, b), model (c, d)" and unreadable dtypes
}

func (e *LoadError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, fmt.Sprintf("%d missing: %s", len(e.Missing), strings.Join(e.Missing, ", ")))
	}
	if len(e.Unexpected) > 0 {
		parts = append(parts, fmt.Sprintf("%d unexpected: %s", len(e.Unexpected), strings.Join(e.Unexpected, ", ")))
	}
	if len(e.Mismatched) > 0 {
		parts = append(parts, fmt.Sprintf("%d mismatched: %s", len(e.Mismatched), strings.Join(e.Mismatched, "; ")))
	}
	return fmt.Sprintf("load %s: checkpoint does not fit the model (%s); check that config.json describes this checkpoint", e.Path, strings.Join(parts, "; "))
}

// Load copies a safetensors file into the store's parameters and buffers.
// Loading is strict: a missing, unexpected or mismatched tensor is a
// *LoadError naming all of them, and then nothing is changed. F64, F32, F16
// and BF16 tensors are converted to the store's dtype. When path is absent
// and path+".index.json" is there (a sharded checkpoint, as Hugging Face
// saves models of more than a few GB), its shards are read as one file
// (safetensors.ReadCheckpoint).
func (s *Store) Load(path string) error { return s.LoadMapped(path, nil) }

// LoadMapped is Load through a KeyMap. Several keys may map to one
// parameter (a tied weight saved under each of its names); they must then
// hold equal values. See OptionalKeys and SkipChecker for what a KeyMap may
// add.
func (s *Store) LoadMapped(path string, km KeyMap) error {
	f, err := safetensors.ReadCheckpoint(path)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	le := &LoadError{Path: path}
	type pending struct {
		p         *Param
		t         safetensors.Tensor
		transpose bool
	}
	found := map[string]pending{}
	aliases := map[string][]string{} // parameter name -> further keys loading it
	seen := map[string]bool{}        // parameters the file has, usable or not
	for _, key := range f.Names() {
		name, transpose, skip := key, false, false
		if km != nil {
			name, transpose, skip = km.FromFile(key)
		}
		if skip {
			if sc, ok := km.(SkipChecker); ok {
				if err := checkSkipped(sc, f, key); err != nil {
					le.Mismatched = append(le.Mismatched, fmt.Sprintf("%s: %v", key, err))
				}
			}
			continue
		}
		p, ok := s.byName[name]
		if !ok {
			le.Unexpected = append(le.Unexpected, key)
			continue
		}
		t, _ := f.Tensor(key)
		shape := slices.Clone(t.Shape)
		if transpose && len(shape) == 2 {
			shape[0], shape[1] = shape[1], shape[0]
		}
		switch {
		case !slices.Equal(shape, []int(p.Value.Shape())):
			le.Mismatched = append(le.Mismatched, fmt.Sprintf("%s: file %v, model %v", key, t.Shape, []int(p.Value.Shape())))
		case t.DType != safetensors.F64 && t.DType != safetensors.F32 && t.DType != safetensors.F16 && t.DType != safetensors.BF16:
			le.Mismatched = append(le.Mismatched, fmt.Sprintf("%s: dtype %s is not a float", key, t.DType))
		case !seen[name]:
			found[name] = pending{p, t, transpose}
		case key == name: // a parameter's own key is the one the others must agree with
			aliases[name] = append(aliases[name], found[name].t.Name)
			found[name] = pending{p, t, transpose}
		default:
			aliases[name] = append(aliases[name], key)
		}
		seen[name] = true
	}
	optional, _ := km.(OptionalKeys)
	for _, p := range s.all() {
		if !seen[p.Name] && (optional == nil || !optional.Optional(p.Name)) {
			le.Missing = append(le.Missing, keyOf(km, p.Name))
		}
	}
	for name, keys := range aliases {
		w, ok := found[name]
		if !ok {
			continue // the first key is already reported
		}
		for _, key := range keys {
			if err := sameValues(w.t, f, key); err != nil {
				le.Mismatched = append(le.Mismatched, fmt.Sprintf("%s and %s, both loaded into %s, %v", w.t.Name, key, name, err))
			}
		}
	}
	if len(le.Missing)+len(le.Unexpected)+len(le.Mismatched) > 0 {
		slices.Sort(le.Mismatched)
		return le
	}
	for _, p := range s.all() {
		w, ok := found[p.Name]
		if !ok {
			continue // optional and absent
		}
		if err := copyInto(w.p.Value, w.t, w.transpose); err != nil {
			return fmt.Errorf("load %s: %s: %w", path, w.p.Name, err)
		}
	}
	return nil
}

// all lists the parameters, then the buffers.
func (s *Store) all() []*Param { return append(slices.Clip(s.params), s.buffers...) }

// checkSkipped hands a skipped float tensor's values to the checker.
func checkSkipped(sc SkipChecker, f *safetensors.File, key string) error {
	t, _ := f.Tensor(key)
	v, err := t.Float64s()
	if err != nil {
		return err
	}
	return sc.CheckSkipped(key, t.Shape, v)
}

// sameValues reports whether the tensor under key holds a's values.
func sameValues(a safetensors.Tensor, f *safetensors.File, key string) error {
	b, _ := f.Tensor(key)
	if !slices.Equal(a.Shape, b.Shape) {
		return fmt.Errorf("have shapes %v and %v", a.Shape, b.Shape)
	}
	av, err := a.Float64s()
	if err != nil {
		return err
	}
	bv, err := b.Float64s()
	if err != nil {
		return err
	}
	for i := range av {
		if av[i] != bv[i] {
			return fmt.Errorf("differ (first at flat index %d: %g and %g)", i, av[i], bv[i])
		}
	}
	return nil
}

func keyOf(km KeyMap, name string) string {
	if km == nil {
		return name
	}
	k, _ := km.ToFile(name)
	return k
}

func copyInto(dst *tensor.Dense, t safetensors.Tensor, transpose bool) error {
	r, c := 0, 0
	if transpose {
		r, c = t.Shape[0], t.Shape[1]
	}
	switch d := dst.Data().(type) {
	case []float32:
		v, err := t.Float32s()
		if err != nil {
			return err
		}
		if transpose {
			v = transposed(v, r, c)
		}
		copy(d, v)
	case []float64:
		v, err := t.Float64s()
		if err != nil {
			return err
		}
		if transpose {
			v = transposed(v, r, c)
		}
		copy(d, v)
	default:
		return fmt.Errorf("unsupported parameter data %T", d)
	}
	return nil
}

// SaveCheckpoint writes dir/model.safetensors and dir/config.json (config
// as indented JSON), each atomically, creating dir if needed.
func SaveCheckpoint(dir string, config any, s *Store, metadata map[string]string) error {
	if _, err := json.Marshal(config); err != nil {
		return fmt.Errorf("save checkpoint %s: config: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if err := s.Save(filepath.Join(dir, WeightsFile), metadata); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return WriteConfig(dir, config)
}

// WriteConfig writes config as indented JSON to dir/config.json, atomically.
func WriteConfig(dir string, config any) error {
	js, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return fmt.Errorf("write config %s: %w", dir, err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, ConfigFile), append(js, '\n')); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// ReadConfig decodes dir/config.json into config. Fields the struct does not
// have are ignored, as Hugging Face configs carry many.
func ReadConfig(dir string, config any) error {
	b, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if errors.Is(err, fs.ErrNotExist) && ckptswap.Finish(dir) == nil { // a save that a kill interrupted
		b, err = os.ReadFile(filepath.Join(dir, ConfigFile))
	}
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	if err := json.Unmarshal(b, config); err != nil {
		return fmt.Errorf("read config %s: %w", filepath.Join(dir, ConfigFile), err)
	}
	return nil
}

// LoadCheckpoint loads dir/model.safetensors into the store (see Load).
func LoadCheckpoint(dir string, s *Store) error {
	return s.Load(filepath.Join(dir, WeightsFile))
}

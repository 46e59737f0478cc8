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
	s.settle(false) // DeferInit's pending values
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
// (safetensors.OpenCheckpoint).
//
// The file is read tensor by tensor, each straight into its parameter
// (safetensors.File.ReadFloat32s), so that loading takes little memory
// beyond the model's own: only a tensor stored transposed (GPT-2's) is
// staged whole. The headers are checked before any parameter is written;
// a file that shrinks while it is read is an error that leaves the
// parameters read so far loaded.
func (s *Store) Load(path string) error { return s.LoadMapped(path, nil) }

// LoadMapped is Load through a KeyMap. Several keys may map to one
// parameter (a tied weight saved under each of its names); they must then
// hold equal values. See OptionalKeys and SkipChecker for what a KeyMap may
// add.
func (s *Store) LoadMapped(path string, km KeyMap) error {
	return s.LoadEach(path, km, nil)
}

// LoadEach is LoadMapped calling loaded, when not nil, with each
// parameter or buffer as soon as it holds the file's values, in the
// store's order (parameters, then buffers), so that a loader can convert
// each weight as it arrives (Linear.Reduce) rather than after the whole
// model is read. An error from loaded stops the load and is returned.
func (s *Store) LoadEach(path string, km KeyMap, loaded func(p *Param) error) error {
	f, err := safetensors.OpenCheckpoint(path)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer f.Close()
	le := &LoadError{Path: path}
	type pending struct {
		p         *Param
		key       string
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
			found[name] = pending{p, key, transpose}
		case key == name: // a parameter's own key is the one the others must agree with
			aliases[name] = append(aliases[name], found[name].key)
			found[name] = pending{p, key, transpose}
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
			if err := sameValues(f, w.key, key); err != nil {
				le.Mismatched = append(le.Mismatched, fmt.Sprintf("%s and %s, both loaded into %s, %v", w.key, key, name, err))
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
		if err := copyInto(w.p.Value, f, w.key, w.transpose); err != nil {
			return fmt.Errorf("load %s: %s: %w", path, w.p.Name, err)
		}
		s.loaded(w.p)
		if loaded != nil {
			if err := loaded(w.p); err != nil {
				return fmt.Errorf("load %s: %s: %w", path, w.p.Name, err)
			}
		}
	}
	// DeferInit: the tensors the file did not provide get their initial
	// values now.
	s.deferInit = false
	s.settle(false)
	return nil
}

// all lists the parameters, then the buffers.
// It is a new slice, which Remove (a LoadEach callback's Reduce) leaves
// alone.
func (s *Store) all() []*Param { return slices.Concat(s.params, s.buffers) }

// checkSkipped hands a skipped float tensor's values to the checker.
func checkSkipped(sc SkipChecker, f *safetensors.File, key string) error {
	t, err := f.ReadTensor(key)
	if err != nil {
		return err
	}
	v, err := t.Float64s()
	if err != nil {
		return err
	}
	return sc.CheckSkipped(key, t.Shape, v)
}

// sameValues reports whether the tensors under keys a and b hold the same
// values.
func sameValues(f *safetensors.File, a, b string) error {
	ta, _ := f.Tensor(a)
	tb, _ := f.Tensor(b)
	if !slices.Equal(ta.Shape, tb.Shape) {
		return fmt.Errorf("have shapes %v and %v", ta.Shape, tb.Shape)
	}
	av, err := readFloat64s(f, ta)
	if err != nil {
		return err
	}
	bv, err := readFloat64s(f, tb)
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

// readFloat64s reads t, a tensor of f, as float64s.
func readFloat64s(f *safetensors.File, t safetensors.Tensor) ([]float64, error) {
	if t.DType != safetensors.F64 && t.DType != safetensors.F32 && t.DType != safetensors.F16 && t.DType != safetensors.BF16 {
		r, err := f.ReadTensor(t.Name)
		if err != nil {
			return nil, err
		}
		return r.Float64s()
	}
	v := make([]float64, t.NumElements())
	return v, f.ReadFloat64s(t.Name, v)
}

func keyOf(km KeyMap, name string) string {
	if km == nil {
		return name
	}
	k, _ := km.ToFile(name)
	return k
}

// copyInto reads the tensor under key into dst, straight into its
// backing array unless it is stored transposed.
func copyInto(dst *tensor.Dense, f *safetensors.File, key string, transpose bool) error {
	t, _ := f.Tensor(key)
	r, c := 0, 0
	if transpose {
		r, c = t.Shape[0], t.Shape[1]
	}
	switch d := dst.Data().(type) {
	case []float32:
		return readInto(f, key, d, transpose, r, c)
	case []float64:
		return readInto(f, key, d, transpose, r, c)
	default:
		return fmt.Errorf("unsupported parameter data %T", d)
	}
}

// readInto reads key into d, transposing an (r, c) matrix when asked.
func readInto[T float32 | float64](f *safetensors.File, key string, d []T, transpose bool, r, c int) error {
	read := func(v []T) error {
		switch v := any(v).(type) {
		case []float32:
			return f.ReadFloat32s(key, v)
		case []float64:
			return f.ReadFloat64s(key, v)
		}
		return nil
	}
	if !transpose {
		return read(d)
	}
	v := make([]T, len(d))
	if err := read(v); err != nil {
		return err
	}
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			d[j*r+i] = v[i*c+j]
		}
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

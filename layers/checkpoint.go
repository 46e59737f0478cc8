package layers

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/internal/atomicfile"
	"github.com/d73a19ff/zoo/internal/safetensors"
)

// The file names of a checkpoint directory, as Hugging Face names them.
const (
	WeightsFile = "model.safetensors"
	ConfigFile  = "config.json"
)

// Save writes every parameter to a safetensors file at path, atomically: a
// crash leaves any previous file at path intact. Tensors are written in the
// store's dtype under their checkpoint keys, with metadata "format": "pt"
// (which Hugging Face's loader expects) plus the given metadata.
func (s *Store) Save(path string, metadata map[string]string) error {
	md := map[string]string{"format": "pt"}
	for k, v := range metadata {
		md[k] = v
	}
	ts := make([]safetensors.Tensor, 0, len(s.params))
	for _, p := range s.params {
		var t safetensors.Tensor
		var err error
		switch d := p.Value.Data().(type) {
		case []float32:
			t, err = safetensors.FromFloat32s(p.Name, p.Value.Shape(), d)
		case []float64:
			t, err = safetensors.FromFloat64s(p.Name, p.Value.Shape(), d)
		default:
			err = fmt.Errorf("unsupported data %T", d)
		}
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

// Load copies a safetensors file into the store's parameters. Loading is
// strict: a missing, unexpected or mismatched tensor is a *LoadError naming
// all of them, and then no parameter is changed. F64, F32, F16 and BF16
// tensors are converted to the store's dtype.
func (s *Store) Load(path string) error {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return s.loadFile(path, f)
}

func (s *Store) loadFile(path string, f *safetensors.File) error {
	le := &LoadError{Path: path}
	type pending struct {
		p *Param
		t safetensors.Tensor
	}
	var todo []pending
	for _, p := range s.params {
		t, ok := f.Tensor(p.Name)
		if !ok {
			le.Missing = append(le.Missing, p.Name)
			continue
		}
		if !slices.Equal(t.Shape, []int(p.Value.Shape())) {
			le.Mismatched = append(le.Mismatched, fmt.Sprintf("%s: file %v, model %v", p.Name, t.Shape, []int(p.Value.Shape())))
			continue
		}
		switch t.DType {
		case safetensors.F64, safetensors.F32, safetensors.F16, safetensors.BF16:
		default:
			le.Mismatched = append(le.Mismatched, fmt.Sprintf("%s: dtype %s is not a float", p.Name, t.DType))
			continue
		}
		todo = append(todo, pending{p, t})
	}
	for _, name := range f.Names() {
		if _, ok := s.byName[name]; !ok {
			le.Unexpected = append(le.Unexpected, name)
		}
	}
	if len(le.Missing)+len(le.Unexpected)+len(le.Mismatched) > 0 {
		return le
	}
	for _, w := range todo {
		if err := copyInto(w.p.Value, w.t); err != nil {
			return fmt.Errorf("load %s: %s: %w", path, w.p.Name, err)
		}
	}
	return nil
}

func copyInto(dst *tensor.Dense, t safetensors.Tensor) error {
	switch d := dst.Data().(type) {
	case []float32:
		v, err := t.Float32s()
		if err != nil {
			return err
		}
		copy(d, v)
	case []float64:
		v, err := t.Float64s()
		if err != nil {
			return err
		}
		copy(d, v)
	default:
		return fmt.Errorf("unsupported parameter data %T", d)
	}
	return nil
}

// SaveCheckpoint writes dir/config.json (config as indented JSON) and
// dir/model.safetensors, each atomically, creating dir if needed.
func SaveCheckpoint(dir string, config any, s *Store, metadata map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	js, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return fmt.Errorf("save checkpoint %s: config: %w", dir, err)
	}
	if err := s.Save(filepath.Join(dir, WeightsFile), metadata); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, ConfigFile), append(js, '\n')); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return nil
}

// ReadConfig decodes dir/config.json into config. Fields the struct does not
// have are ignored, as Hugging Face configs carry many.
func ReadConfig(dir string, config any) error {
	b, err := os.ReadFile(filepath.Join(dir, ConfigFile))
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

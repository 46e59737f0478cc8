package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/internal/ckptfiles"
	"github.com/d73a19ff/zoo/internal/ckptswap"
	"github.com/d73a19ff/zoo/layers"
)

// The files of a checkpoint directory: the same for every family, named as
// Hugging Face names them, so that Hugging Face's from_pretrained reads the
// model and its tokenizer from the directory as it is.
const (
	ConfigFile       = ckptfiles.Config       // config.json, with model_type
	WeightsFile      = ckptfiles.Weights      // model.safetensors, Hugging Face's tensor names
	TokenizerFile    = ckptfiles.Tokenizer    // tokenizer.json: text families, a Hugging Face tokenizer
	PreprocessorFile = ckptfiles.Preprocessor // preprocessor_config.json: image families, Hugging Face's image processor
	OptimizerFile    = ckptfiles.Optimizer    // optimizer.safetensors: training state, the optimizer's moments
	TrainerFile      = ckptfiles.Trainer      // trainer.json: training state, step, data position, dropout counter
)

// maxConfigBytes bounds a config.json read: real ones are a few kilobytes.
const maxConfigBytes = 16 << 20

// Checkpoint is a checkpoint directory as Open found it.
type Checkpoint struct {
	Dir           string
	ModelType     string   // config.json's model_type
	Family        Family   // the registered family that reads it
	Architectures []string // config.json's architectures, if any
}

// Open reads dir/config.json and finds the family of its model_type. A
// missing directory or config.json, a config.json without model_type, and a
// model_type no registered family reads are errors that say so (the last
// naming the known model types).
func Open(dir string) (*Checkpoint, error) {
	raw, err := readConfig(dir)
	if err != nil {
		return nil, err
	}
	var head struct {
		ModelType     string   `json:"model_type"`
		Architectures []string `json:"architectures"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ConfigFile), err)
	}
	if head.ModelType == "" {
		return nil, fmt.Errorf("checkpoint %s: %s has no model_type, so zoo cannot tell which family reads it; add one of: %s", dir, ConfigFile, joinTypes())
	}
	f, err := ForModelType(head.ModelType)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	return &Checkpoint{Dir: dir, ModelType: head.ModelType, Family: f, Architectures: head.Architectures}, nil
}

// Expect reports an error, naming both families, unless the checkpoint is
// of the named family.
func (c *Checkpoint) Expect(family string) error {
	if c.Family.Name == family {
		return nil
	}
	want := family
	if f, err := Lookup(family); err == nil {
		want = fmt.Sprintf("%s (model_type %s)", family, f.ModelTypes[0])
	}
	return fmt.Errorf("checkpoint %s is a %s checkpoint (model_type %s), another model family; this needs a %s checkpoint", c.Dir, c.Family.Name, c.ModelType, want)
}

// Has reports whether the checkpoint directory holds the named file.
func (c *Checkpoint) Has(file string) bool {
	st, err := os.Stat(filepath.Join(c.Dir, file))
	return err == nil && st.Mode().IsRegular()
}

// Tokenizer loads the checkpoint's tokenizer.json.
func (c *Checkpoint) Tokenizer() (datasets.Tokenizer, error) { return LoadTokenizer(c.Dir) }

// ReadConfig decodes dir/config.json into cfg (a family's Config, whose
// UnmarshalJSON reads Hugging Face's form) after checking that it is a
// checkpoint of the named family: one of another family is an error naming
// both. A config.json without model_type is read as the named family's.
func ReadConfig(dir, family string, cfg any) error {
	raw, err := readConfig(dir)
	if err != nil {
		return err
	}
	var head struct {
		ModelType string `json:"model_type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, ConfigFile), err)
	}
	if head.ModelType != "" {
		f, err := ForModelType(head.ModelType)
		if err != nil {
			if own, lerr := Lookup(family); lerr == nil {
				return fmt.Errorf("%s: model_type %q is another model family; this needs a %s checkpoint (model_type %s); %w",
					filepath.Join(dir, ConfigFile), head.ModelType, family, own.ModelTypes[0], err)
			}
			return fmt.Errorf("%s: %w", filepath.Join(dir, ConfigFile), err)
		}
		c := &Checkpoint{Dir: dir, ModelType: head.ModelType, Family: f}
		if err := c.Expect(family); err != nil {
			return err
		}
	}
	if err := json.Unmarshal(raw, cfg); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, ConfigFile), err)
	}
	return nil
}

func readConfig(dir string) ([]byte, error) {
	if err := present(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ConfigFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, derr := os.Stat(dir); derr != nil {
			return nil, fmt.Errorf("checkpoint %s: no such file or directory", dir)
		}
		return nil, fmt.Errorf("checkpoint %s: no %s: this is not a checkpoint directory (one holds %s, %s and a tokenizer or preprocessor)", dir, ConfigFile, ConfigFile, WeightsFile)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if len(raw) > maxConfigBytes {
		return nil, fmt.Errorf("checkpoint %s: larger than %d MB: not a model config", path, maxConfigBytes>>20)
	}
	return raw, nil
}

// present makes sure the checkpoint directory dir is there before it is
// read: a training run killed while it replaced dir (train's checkpoint
// swap) can leave it missing with a complete copy beside it, which is put
// back in dir's place with one rename (ckptswap.Finish), as the run's own
// recovery would. Every loader of every family reads config.json first,
// through here. When the rename cannot be made (read-only storage), the
// error names the complete copy to read instead.
func present(dir string) error {
	err := ckptswap.Finish(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil // there, or missing with no copy: the caller says which
	}
	return err
}

// SaveModel writes the model's part of a checkpoint into dir (created if
// needed): model.safetensors through km (nil: parameter names are the
// keys), then config.json, each atomically. cfg must marshal to the
// family's Hugging Face config.json, model_type included.
func SaveModel(dir string, cfg any, s *layers.Store, km layers.KeyMap) error {
	if _, err := json.Marshal(cfg); err != nil {
		return fmt.Errorf("save checkpoint %s: config: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if err := s.SaveMapped(filepath.Join(dir, WeightsFile), nil, km); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return layers.WriteConfig(dir, cfg)
}

// LoadWeights reads dir/model.safetensors into the store through km (nil:
// the keys are the parameter names); a mismatch is a *layers.LoadError
// naming every missing, unexpected and mis-shaped tensor.
func LoadWeights(dir string, s *layers.Store, km layers.KeyMap) error {
	return s.LoadMapped(filepath.Join(dir, WeightsFile), km)
}

// SaveTokenizer writes dir/tokenizer.json atomically.
func SaveTokenizer(dir string, tok datasets.Tokenizer) error {
	if err := tok.Save(filepath.Join(dir, TokenizerFile)); err != nil {
		return fmt.Errorf("save checkpoint %s: tokenizer: %w", dir, err)
	}
	return nil
}

// LoadTokenizer reads dir/tokenizer.json.
func LoadTokenizer(dir string) (datasets.Tokenizer, error) {
	if err := present(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, TokenizerFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if _, derr := os.Stat(dir); derr != nil {
			return nil, fmt.Errorf("checkpoint %s: no such file or directory", dir)
		}
		return nil, fmt.Errorf("checkpoint %s has no %s: give a checkpoint written by zoo or a Hugging Face model directory with its tokenizer", dir, TokenizerFile)
	}
	tok, err := datasets.LoadTokenizer(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	return tok, nil
}

func joinTypes() string {
	s := ""
	for i, t := range KnownModelTypes() {
		if i > 0 {
			s += ", "
		}
		s += t
	}
	return s
}

// Weights is a model as a training task saves and reloads it: Save writes
// the model's files of the bundle, LoadWeights reads a model.safetensors
// back into its parameters.
type Weights interface {
	Save(dir string) error
	LoadWeights(path string) error
}

// SaveText writes a text model's checkpoint: its model files and
// tokenizer.json. It is a text family's train.Task Save.
func SaveText(dir string, m Weights, tok datasets.Tokenizer) error {
	if err := m.Save(dir); err != nil {
		return err
	}
	return SaveTokenizer(dir, tok)
}

// LoadInto reads dir/model.safetensors into m's parameters (a
// train.Task's Load, for a resume).
func LoadInto(dir string, m Weights) error {
	return m.LoadWeights(filepath.Join(dir, WeightsFile))
}

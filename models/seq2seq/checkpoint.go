package seq2seq

import (
	"fmt"
	"path/filepath"

	"github.com/d73a19ff/zoo/layers"
)

// Save writes dir/config.json and dir/model.safetensors, each atomically.
func (m *Model) Save(dir string) error {
	if err := layers.SaveCheckpoint(dir, m.Config, m.Store, map[string]string{"format": "pt", "model_type": ModelType}); err != nil {
		return fmt.Errorf("seq2seq: %w", err)
	}
	return nil
}

// Load reads a checkpoint directory into a new model. A checkpoint of
// another family, or weights that do not fit the config, is an error that
// names what is wrong (missing and unexpected keys in a *layers.LoadError).
// Options set the dtype.
func Load(dir string, opts ...layers.Option) (*Model, error) {
	var cfg Config
	if err := layers.ReadConfig(dir, &cfg); err != nil {
		return nil, fmt.Errorf("seq2seq: %w", err)
	}
	m, err := New(cfg, opts...)
	if err != nil {
		return nil, fmt.Errorf("seq2seq: %s: %w", filepath.Join(dir, layers.ConfigFile), err)
	}
	if err := m.LoadWeights(filepath.Join(dir, layers.WeightsFile)); err != nil {
		return nil, err
	}
	return m, nil
}

// LoadWeights reads weights from a safetensors file into the model.
func (m *Model) LoadWeights(path string) error {
	if err := m.Store.Load(path); err != nil {
		return fmt.Errorf("seq2seq: %w", err)
	}
	return nil
}

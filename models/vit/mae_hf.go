package vit

// This file reads and writes ViTMAEForPreTraining checkpoints in Hugging
// Face's layout: config.json with model_type "vit_mae" and architectures
// [ViTMAEForPreTraining], and model.safetensors with the parameters and the
// two fixed position tables under transformers' keys (the model's names).

import (
	"fmt"
	"path/filepath"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
)

// Save writes the model as a Hugging Face ViTMAE checkpoint: dir/config.json
// and dir/model.safetensors (parameters and position tables), each written
// atomically.
func (m *ViTMAEForPreTraining) Save(dir string) error {
	if err := models.SaveModel(dir, m.Config, m.Store, &hfKeys{store: m.Store}); err != nil {
		return fmt.Errorf("vit_mae: %w", err)
	}
	return nil
}

// LoadWeights reads a model.safetensors written by Save (or by transformers'
// ViTMAEForPreTraining) strictly: every parameter and table must be there
// and fit.
func (m *ViTMAEForPreTraining) LoadWeights(path string) error {
	if err := m.Store.LoadMapped(path, nil); err != nil {
		return fmt.Errorf("vit_mae: %w", err)
	}
	return nil
}

// readMAEConfig reads dir/config.json as a ViTMAE config; another family's
// (or plain ViT's) is an error naming it.
func readMAEConfig(dir string) (ViTMAEConfig, error) {
	var cfg ViTMAEConfig
	var head struct {
		ModelType string `json:"model_type"`
	}
	if err := layers.ReadConfig(dir, &head); err != nil {
		return cfg, fmt.Errorf("vit_mae: %w", err)
	}
	if head.ModelType != MAEModelType {
		return cfg, fmt.Errorf("vit_mae: %s has model_type %q: it is not an MAE checkpoint (model_type %s); pretrain one with zoo pretrain vit", filepath.Join(dir, models.ConfigFile), head.ModelType, MAEModelType)
	}
	if err := models.ReadConfig(dir, "vit", &cfg); err != nil {
		return cfg, fmt.Errorf("vit_mae: %w", err)
	}
	return cfg, nil
}

// LoadViTMAEForPreTraining reads a ViTMAE checkpoint directory (Save's or
// transformers' ViTMAEForPreTraining.save_pretrained). Options are the
// store's (layers.WithDtype) and New's; the model has one head, so it
// reads strictly with or without models.Strict, and the report is empty.
func LoadViTMAEForPreTraining(dir string, opts ...models.LoadOption) (*ViTMAEForPreTraining, LoadReport, error) {
	o, err := readLoadOptions("LoadViTMAEForPreTraining", false, opts)
	if err != nil {
		return nil, LoadReport{}, err
	}
	if o.imageSize != 0 {
		return nil, LoadReport{}, fmt.Errorf("vit_mae: LoadViTMAEForPreTraining: WithImageSize is for a classifier or backbone (Load, LoadForImageClassification): leave it out")
	}
	cfg, err := readMAEConfig(dir)
	if err != nil {
		return nil, LoadReport{}, err
	}
	m, err := NewViTMAEForPreTraining(cfg, o.model...)
	if err != nil {
		return nil, LoadReport{}, err
	}
	if err := m.LoadWeights(filepath.Join(dir, models.WeightsFile)); err != nil {
		return nil, LoadReport{}, err
	}
	return m, LoadReport{}, nil
}

package main

import (
	"fmt"

	"github.com/d73a19ff/zoo/models"
)

// weightFormatsHelp lists the formats -weights takes.
const weightFormatsHelp = "f32, bf16 or int8 (models.WithWeightFormat)"

// loadOptions are the load options that decode with weights in format
// (models.ParseWeightFormat's names), and the format's canonical name.
func loadOptions(format string) ([]models.LoadOption, string, error) {
	f, err := models.ParseWeightFormat(format)
	if err != nil {
		return nil, "", fmt.Errorf("-weights: %w", err)
	}
	return []models.LoadOption{models.WithWeightFormat(f)}, string(f), nil
}

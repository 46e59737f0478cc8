package main

import (
	"fmt"

	"github.com/d73a19ff/zoo/models"
)

// weightFormatsHelp lists the formats -weights takes in this build.
const weightFormatsHelp = "f32 (bf16 and int8 once models.WithWeightFormat exists)"

// loadOptions are the load options that decode with weights in format.
func loadOptions(format string) ([]models.LoadOption, error) {
	if format == "f32" {
		return nil, nil
	}
	return nil, fmt.Errorf("-weights %q: this build of zoo decodes float32 weights only; want f32", format)
}

package ckptfiles_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/d73a19ff/zoo/internal/ckptfiles"
)

// The model's files are named as Hugging Face's transformers names them
// (CONFIG_NAME, SAFE_WEIGHTS_NAME, TOKENIZER_FILE, IMAGE_PROCESSOR_NAME),
// so that from_pretrained reads a zoo checkpoint directory as it is.
func TestHuggingFaceNames(t *testing.T) {
	for got, want := range map[string]string{
		ckptfiles.Config:       "config.json",
		ckptfiles.Weights:      "model.safetensors",
		ckptfiles.Tokenizer:    "tokenizer.json",
		ckptfiles.Preprocessor: "preprocessor_config.json",
	} {
		assert.Equal(t, want, got)
	}
}

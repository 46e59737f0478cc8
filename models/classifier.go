package models

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/layers"
)

// ClassifierInputs are the graph inputs of a batch of B texts, right-padded
// to T tokens. A family reads what its pooling needs: GPT the last token,
// BERT the first ([CLS]), the mask and the token types. Image families
// will add their pixels here.
type ClassifierInputs struct {
	IDs  *gorgonia.Node // (B, T) int token ids, padding rows and tails set to the pad id
	Mask *gorgonia.Node // (B, T) float: 1 for a token, 0 for padding
	Last *gorgonia.Node // (B) int: the position of each text's last token
	// TokenTypes (B, T) int are the segment ids (0 for a pair's first text
	// and its specials, 1 for the second; 0 for padding), or nil: the
	// pipeline makes them only for a checkpoint whose config.json has a
	// type_vocab_size (TextSizes), and families without token types
	// ignore them.
	TokenTypes *gorgonia.Node
}

// Classifier is a backbone with a sequence-classification head: the seam of
// the shared classification fine-tuning pipeline (package finetune). The
// backbone pools each sequence into one vector (GPT: the last real token;
// BERT: the [CLS] pooler; ViT: the class token or the mean of the
// patches) and the head maps it to class scores. The pipeline owns the
// data, the batches, the engine and the reports.
//
// The families' classifiers are safe for concurrent use by multiple
// goroutines, each building and running graphs of its own with
// ClassLogits, except LoadWeights (and training), which write the
// parameters and must not overlap with anything else.
type Classifier interface {
	// ParamStore holds every parameter, backbone and head.
	ParamStore() *layers.Store
	// ClassNames are the labels by class id.
	ClassNames() []string
	// MaxLength is the longest text in tokens the backbone reads.
	MaxLength() int
	// PadID is the token id that fills padding.
	PadID() int
	// ClassLogits maps a batch to class scores (B, len(ClassNames())).
	ClassLogits(g *layers.Graph, in ClassifierInputs) (*gorgonia.Node, error)
	// Save writes the classifier's model files (config.json with its labels,
	// model.safetensors) into dir; LoadWeights reads a model.safetensors
	// written by Save back into ParamStore.
	Save(dir string) error
	LoadWeights(path string) error
}

// TextSizes reads the sizes of a text checkpoint's input tables from
// dir/config.json, under Hugging Face's names for every family: vocab_size
// (the rows of the token embedding) and type_vocab_size (the token types,
// BERT's segments). A size the config does not have is 0.
func TextSizes(dir string) (vocab, typeVocab int, err error) {
	raw, err := readConfig(dir)
	if err != nil {
		return 0, 0, err
	}
	var sizes struct {
		Vocab     int `json:"vocab_size"`
		TypeVocab int `json:"type_vocab_size"`
	}
	if err := json.Unmarshal(raw, &sizes); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", filepath.Join(dir, ConfigFile), err)
	}
	return sizes.Vocab, sizes.TypeVocab, nil
}

// CheckVocab reports a tokenizer whose size differs from the vocab_size of
// the checkpoint dir's config.json, naming both: with more tokens it encodes
// ids the model has no embedding for, with fewer it is not the tokenizer
// the model was trained with. A config without vocab_size (a family
// without token embeddings) passes.
func CheckVocab(dir string, tok datasets.Tokenizer) error {
	v, _, err := TextSizes(dir)
	if err != nil {
		return err
	}
	if n := tok.VocabSize(); v > 0 && n != v {
		return fmt.Errorf("checkpoint %s: its tokenizer has %d tokens but its model's vocab_size is %d: they do not belong together; use the tokenizer.json the model was trained with", dir, n, v)
	}
	return nil
}

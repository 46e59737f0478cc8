package models

import (
	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/layers"
)

// ClassifierInputs are the graph inputs of a batch of B texts, right-padded
// to T tokens. A family reads what its pooling needs: GPT the last token,
// BERT the first ([CLS]) and the mask. Image families will add their pixels
// here.
type ClassifierInputs struct {
	IDs  *gorgonia.Node // (B, T) int token ids, padding rows and tails set to the pad id
	Mask *gorgonia.Node // (B, T) float: 1 for a token, 0 for padding
	Last *gorgonia.Node // (B) int: the position of each text's last token
}

// Classifier is a backbone with a sequence-classification head: the seam of
// the shared classification fine-tuning pipeline (package finetune). The
// backbone pools each sequence into one vector (GPT: the last real token;
// BERT: the [CLS] pooler; ViT: the class token or the mean of the
// patches) and the head maps it to class scores. The pipeline owns the
// data, the batches, the engine and the reports.
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

package models

import (
	"cmp"
	"slices"
)

// What the one-call inference of every family returns (issue 36: the Go
// counterpart of Hugging Face's pipelines). Each family's pipeline type
// (bert.TextClassification, vit.ImageClassification, …) takes strings or
// images and returns these plain Go values; their JSON names are the
// pipelines' own, so `zoo predict --json` writes what a Hugging Face user
// reads.

// MaxPredictInputs bounds the inputs of one Predict call: a pipeline
// refuses more, before tokenizing any (split the inputs into calls).
const MaxPredictInputs = 1 << 16

// MaxPredictTextBytes bounds one text given to a pipeline, before it is
// tokenized: 16 MiB.
const MaxPredictTextBytes = 16 << 20

// Label is one class of a classification with its probability: the
// text- and image-classification pipelines' {"label", "score"}.
type Label struct {
	Label string  `json:"label"`
	Score float64 `json:"score"`
}

// Entity is one entity of token classification grouped as Hugging Face's
// aggregation_strategy="simple": consecutive tokens of one entity type (B-
// and I- tags merged), its mean score, its word (its tokens through the
// tokenizer's decoder, as the pipeline's "word": lowercased by an uncased
// tokenizer; input[Start:End] is the text itself) and its byte offsets
// [Start, End) in the input.
type Entity struct {
	Group string  `json:"entity_group"`
	Score float64 `json:"score"`
	Word  string  `json:"word"`
	Start int     `json:"start"`
	End   int     `json:"end"`
}

// Answer is extractive question answering's answer: the span of the
// context [Start, End) (byte offsets), its text and its probability, as
// the question-answering pipeline's {"score", "start", "end", "answer"}.
type Answer struct {
	Score  float64 `json:"score"`
	Start  int     `json:"start"`
	End    int     `json:"end"`
	Answer string  `json:"answer"`
}

// TopLabels pairs names with their probabilities probs (one each) and
// returns the k most probable (all for k ≤ 0), best first, ties in name
// order: Python's stable sort, as the classification pipelines sort, and
// torch.topk's order for distinct scores.
func TopLabels(probs []float64, names []string, k int) []Label {
	idx := make([]int, len(probs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(probs[b], probs[a]) })
	if k > 0 && k < len(idx) {
		idx = idx[:k]
	}
	out := make([]Label, len(idx))
	for i, j := range idx {
		out[i] = Label{Label: names[j], Score: probs[j]}
	}
	return out
}

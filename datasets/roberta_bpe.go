package datasets

import (
	"context"
	"encoding/json"
	"fmt"
)

// RobertaSpecials are RoBERTa's special tokens at roberta-base's ids:
// <s> 0, <pad> 1, </s> 2, <unk> 3, <mask> 4.
var RobertaSpecials = []string{"<s>", "<pad>", "</s>", "<unk>", "<mask>"}

// TrainRobertaBPE trains a byte-level BPE of at most vocabSize tokens on
// the corpus (TrainBPE: Hugging Face's BpeTrainer) with RobertaSpecials
// at ids 0-4, laid out as roberta-base's tokenizer.json: <mask> strips
// the space before it (lstrip), the ByteLevel pre-tokenizer adds no
// prefix space, and the post-processor is RobertaProcessing (<s> A </s>,
// <s> A </s></s> B </s>, trim_offsets), so the tokenizer is a
// PairEncoder with offsets, as a RoBERTa checkpoint's pipelines read it.
// A cancelled ctx stops it as TrainBPEContext. The tokenizer is safe for
// concurrent use.
func TrainRobertaBPE(ctx context.Context, c *Corpus, vocabSize int) (Tokenizer, error) {
	return trainRobertaBPE(ctx, c, vocabSize)
}

// TrainRobertaBPETexts is TrainRobertaBPE on texts held in memory.
func TrainRobertaBPETexts(ctx context.Context, texts []string, vocabSize int) (Tokenizer, error) {
	return trainRobertaBPE(ctx, textList(texts), vocabSize)
}

func trainRobertaBPE(ctx context.Context, c textSource, vocabSize int) (Tokenizer, error) {
	tok, err := trainBPE(ctx, c, vocabSize, RobertaSpecials)
	if err != nil {
		return nil, err
	}
	raw, err := tok.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("datasets: train RoBERTa BPE: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("datasets: train RoBERTa BPE: %w", err)
	}
	added, _ := m["added_tokens"].([]any)
	for _, a := range added {
		if x, ok := a.(map[string]any); ok && x["content"] == "<mask>" {
			x["lstrip"] = true
		}
	}
	m["post_processor"] = map[string]any{"type": "RobertaProcessing", "sep": []any{"</s>", 2}, "cls": []any{"<s>", 0},
		"trim_offsets": true, "add_prefix_space": false}
	out, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return nil, fmt.Errorf("datasets: train RoBERTa BPE: %w", err)
	}
	h, err := parseTokenizer(append(out, '\n'))
	if err != nil {
		return nil, fmt.Errorf("datasets: train RoBERTa BPE: load the trained tokenizer: %w", err)
	}
	return h, nil
}

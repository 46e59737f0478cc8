package main

import (
	"fmt"

	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/bert"
)

// loadAlbertTokenizer reads an ALBERT checkpoint's tokenizer.json: ALBERT's
// Unigram (albert-base-v2's layout), or the WordPiece zoo pretrain bert
// --model-type albert trains, with no more ids than the model's vocabulary
// of vocabSize.
func loadAlbertTokenizer(dir string, vocabSize int) (bert.Tokenizer, error) {
	t, err := models.LoadTokenizer(dir)
	if err != nil {
		return nil, err
	}
	tok, ok := t.(bert.Tokenizer)
	if !ok {
		return nil, fmt.Errorf("checkpoint %s: tokenizer.json is a %T, not a tokenizer an ALBERT reads (its Unigram with the [CLS] $A [SEP] template, or a WordPiece)", dir, t)
	}
	if tok.VocabSize() > vocabSize {
		return nil, fmt.Errorf("checkpoint %s: the tokenizer has %d ids but the model's vocabulary is %d (vocab_size): the tokenizer.json does not belong to this model", dir, tok.VocabSize(), vocabSize)
	}
	return tok, nil
}

package datasets

import (
	"errors"
	"fmt"
)

// ChooseTokenizer is the pipelines' one tokenizer choice: "char" builds a
// character vocabulary of the corpus, "bpe" trains a byte-level BPE of
// bpeVocab tokens on it, and anything else is the path of a tokenizer.json
// (Hugging Face's, or one zoo saved).
func ChooseTokenizer(kind string, c *Corpus, bpeVocab int) (Tokenizer, error) {
	switch kind {
	case "char":
		return NewCharTokenizer(c)
	case "bpe":
		if bpeVocab < 260 {
			return nil, fmt.Errorf("datasets: a byte-level BPE needs at least 260 tokens (256 bytes and a few merges), not %d", bpeVocab)
		}
		return TrainBPE(c, bpeVocab, nil)
	case "":
		return nil, errors.New("config: tokenizer is empty; use char, bpe or the path of a tokenizer.json")
	}
	return LoadTokenizer(kind)
}

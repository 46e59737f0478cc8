package gpt

import (
	"fmt"

	"github.com/d73a19ff/zoo/datasets"
)

// CheckTokenizer reports a tokenizer that does not fit the model: with
// fewer tokens than the model's vocab_size it cannot decode every id the
// model produces, and with more it encodes ids the model has no embedding
// for. Generation calls it up front, so that a mismatch fails instead of
// printing a fraction of the text.
func CheckTokenizer(m *Model, tok datasets.Tokenizer) error {
	switch n, v := tok.VocabSize(), m.Config.VocabSize; {
	case n < v:
		return fmt.Errorf("gpt: the tokenizer has %d tokens, fewer than the model's vocab_size %d: it cannot decode ids %d to %d the model can produce; use the checkpoint's own tokenizer", n, v, n, v-1)
	case n > v:
		return fmt.Errorf("gpt: the tokenizer has %d tokens, more than the model's vocab_size %d: it can encode ids the model has no embedding for; use the checkpoint's own tokenizer", n, v)
	}
	return nil
}

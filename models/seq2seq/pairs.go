package seq2seq

// This file is the preprocessing the seq2seq pipelines share: the joint
// tokenizer with its special tokens and the check that a tokenizer fits a
// model, and encoding pairs with counted truncations. The training
// objective, its length-bucketed data and the run setup are pretrain's
// (seq2seq_task.go, seq2seq_data.go, seq2seq_train.go); distillation's
// checks are finetune's (seq2seq_distill.go).

import (
	"fmt"

	"strings"

	"github.com/d73a19ff/zoo/datasets"
)

// Specials are the special tokens at the start of every seq2seq
// vocabulary, in id order, matching Config's pad_token_id 0,
// bos_token_id 1 and eos_token_id 2; <mask> (3) is denoising's mask.
var Specials = []string{"<pad>", "<s>", "</s>", "<mask>"}

// MaskID is the id of <mask>.
const MaskID = 3

// TrainTokenizer trains a joint byte-level BPE of vocab tokens on texts.
func TrainTokenizer(texts []string, vocab int) (datasets.Tokenizer, error) {
	tok, err := datasets.TrainBPETexts(texts, vocab, Specials)
	if err != nil {
		return nil, err
	}
	return tok, nil
}

// Example is a pair as token ids, without bos and eos.
type Example struct{ Src, Tgt []int }

// Overlong says what to do with a side longer than max_len allows.
type Overlong string

// The policies for over-long sides.
const (
	Truncate Overlong = "truncate" // keep the first tokens, counted
	Skip     Overlong = "skip"     // drop the pair, counted
)

// EncodeReport counts what encoding pairs changed or dropped.
type EncodeReport struct {
	Pairs, Truncated, Skipped, Empty int
}

func (r EncodeReport) String() string {
	return fmt.Sprintf("%d pairs encoded; %d over-long truncated, %d over-long skipped, %d empty after tokenization skipped", r.Pairs, r.Truncated, r.Skipped, r.Empty)
}

// Encode tokenizes pairs for a model whose sources hold at most maxLen−1
// tokens (eos takes one) and whose targets too (bos or eos takes one).
func Encode(tok datasets.Tokenizer, pairs []datasets.Pair, maxLen int, policy Overlong) ([]Example, EncodeReport, error) {
	if policy != Truncate && policy != Skip {
		return nil, EncodeReport{}, fmt.Errorf("seq2seq: over-long policy %q must be %q or %q", policy, Truncate, Skip)
	}
	limit := maxLen - 1
	var out []Example
	var rep EncodeReport
	for i, p := range pairs {
		src, err := tok.Encode(p.Src)
		if err != nil {
			return nil, rep, fmt.Errorf("seq2seq: pair %d source: %w", i, err)
		}
		tgt, err := tok.Encode(p.Tgt)
		if err != nil {
			return nil, rep, fmt.Errorf("seq2seq: pair %d target: %w", i, err)
		}
		if len(src) == 0 || len(tgt) == 0 {
			rep.Empty++
			continue
		}
		if len(src) > limit || len(tgt) > limit {
			if policy == Skip {
				rep.Skipped++
				continue
			}
			rep.Truncated++
			src, tgt = src[:min(len(src), limit)], tgt[:min(len(tgt), limit)]
		}
		out = append(out, Example{Src: src, Tgt: tgt})
	}
	rep.Pairs = len(out)
	return out, rep, nil
}

// CheckTokenizer reports a tokenizer that does not match the model: one
// whose vocabulary size is not the model's, or whose tokens at the model's
// pad, eos and decoder-start ids are not <pad>, </s> and <s> (or <pad>,
// which Marian starts decoding with). A tokenizer of another model
// fails here instead of as a bad id later.
func CheckTokenizer(m *Model, tok datasets.Tokenizer) error {
	c := m.Config
	if n := tok.VocabSize(); n != c.SrcVocabSize || n != c.TgtVocabSize {
		return fmt.Errorf("seq2seq: the tokenizer does not match the checkpoint: it has %d tokens, the model's vocabularies %d (source) and %d (target)", n, c.SrcVocabSize, c.TgtVocabSize)
	}
	for _, sp := range []struct {
		what string
		id   int
		want []string
	}{{"pad_token_id", c.PadTokenID, []string{"<pad>"}}, {"eos_token_id", c.EOSTokenID, []string{"</s>"}},
		{"decoder_start_token_id", c.BOSTokenID, []string{"<s>", "<pad>"}}} {
		text, err := tok.Decode([]int{sp.id})
		if err != nil {
			return fmt.Errorf("seq2seq: the tokenizer does not match the checkpoint: %s %d: %w", sp.what, sp.id, err)
		}
		ok := false
		for _, w := range sp.want {
			ok = ok || text == w
		}
		if !ok {
			return fmt.Errorf("seq2seq: the tokenizer does not match the checkpoint: the model's %s is %d, which the tokenizer reads as %q, not %s", sp.what, sp.id, text, strings.Join(sp.want, " or "))
		}
	}
	return nil
}

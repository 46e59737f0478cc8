package decode

import (
	"fmt"
	"math"
	"slices"
)

// Constraints are the token bans of Hugging Face's generation, applied by
// Sample and BeamSearch at every step, to every row, before a token is
// chosen. Each names the logits processor of transformers'
// generation/logits_process.py (or the model hook) that it reproduces.
// The zero value bans nothing.
//
// Rows are the whole sequences the Stepper sees: the prompt (for an
// encoder-decoder, the decoder start token) and every token chosen since,
// which is what Hugging Face's processors read as input_ids.
type Constraints struct {
	// Suppress are tokens never chosen, set to −∞ on the raw logits, so
	// that the log-softmax of the others is renormalised without them:
	// MarianMTModel.adjust_logits_during_generation's ban of pad_token_id
	// in transformers 4.x (applied before the log-softmax in beam search).
	Suppress []int
	// BadWords is bad_words_ids (NoBadWordsLogitsProcessor): a sequence of
	// one token is never chosen; for a longer one, its last token is not
	// chosen after a row that ends with the rest. In beam search it acts
	// on the log-softmax, which is not renormalised.
	BadWords [][]int
	// NoRepeatNGramSize is no_repeat_ngram_size
	// (NoRepeatNGramLogitsProcessor): with n > 0, a token that would make
	// an n-gram the row already holds is not chosen. 0 turns it off.
	NoRepeatNGramSize int
	// ForcedEOS is forced_eos_token_id (ForcedEOSTokenLogitsProcessor): at
	// the last step a row may take (step MaxNewTokens), every token but
	// these gets −∞ and these get 0, so the row ends with one of them. In
	// beam search the 0 is its log-probability: the forced token adds
	// nothing to a hypothesis's log P. Empty forces nothing.
	ForcedEOS []int
	// RepetitionPenalty is repetition_penalty
	// (RepetitionPenaltyLogitsProcessor): with p > 0 other than 1, the
	// score of every token the row already holds (its prompt and its new
	// tokens, each token once) becomes score·p where it is negative and
	// score/p otherwise, before the other constraints; p > 1 makes
	// repeats less likely. In beam search it acts on the log-softmax, as
	// in transformers. 0 and 1 turn it off. Hugging Face's input_ids of a
	// left-padded batch also hold the pad tokens, so there the pad
	// token's score is penalized in the shorter prompts' rows; the zoo's
	// rows hold no pads.
	RepetitionPenalty float64
	// Renormalize is renormalize_logits (LogitNormalization): in beam
	// search, the log-softmax is taken again after the other
	// constraints, so that the banned tokens' mass goes to the others.
	// Greedy decoding and sampling pick the same tokens either way.
	Renormalize bool
}

// active reports whether c bans anything.
func (c Constraints) active() bool {
	return len(c.Suppress) > 0 || len(c.BadWords) > 0 || c.NoRepeatNGramSize > 0 || len(c.ForcedEOS) > 0 || c.Renormalize ||
		c.Penalizes()
}

// Penalizes reports whether RepetitionPenalty is on (not 0 or 1).
func (c Constraints) Penalizes() bool { return c.RepetitionPenalty != 0 && c.RepetitionPenalty != 1 }

// Validate reports ids that cannot be tokens and empty bad words.
func (c Constraints) Validate() error {
	for _, id := range c.Suppress {
		if id < 0 {
			return fmt.Errorf("decode: suppressed token %d is negative", id)
		}
	}
	for i, w := range c.BadWords {
		if len(w) == 0 {
			return fmt.Errorf("decode: bad word %d is empty; bad_words_ids holds lists of token ids", i)
		}
		for _, id := range w {
			if id < 0 {
				return fmt.Errorf("decode: bad word %d has token %d, which is negative", i, id)
			}
		}
	}
	for _, id := range c.ForcedEOS {
		if id < 0 {
			return fmt.Errorf("decode: forced eos token %d is negative", id)
		}
	}
	if c.NoRepeatNGramSize < 0 {
		return fmt.Errorf("decode: no_repeat_ngram_size %d is negative; 0 turns it off", c.NoRepeatNGramSize)
	}
	if p := c.RepetitionPenalty; !(p >= 0) || math.IsInf(p, 0) {
		return fmt.Errorf("decode: repetition_penalty %g must be a positive number (1 turns it off, > 1 penalizes repeats)", p)
	}
	return nil
}

// checkVocab reports a constraint's id outside a vocabulary of v tokens,
// once the first step has told v.
func (c Constraints) checkVocab(v int) error {
	ids := slices.Concat(c.Suppress, c.ForcedEOS)
	for _, w := range c.BadWords {
		ids = append(ids, w...)
	}
	for _, id := range ids {
		if id >= v {
			return fmt.Errorf("decode: constraint token %d is outside the vocabulary of %d logits", id, v)
		}
	}
	return nil
}

// suppress sets the Suppress tokens of row (V logits) to −∞.
func (c Constraints) suppress(row []float64) {
	for _, id := range c.Suppress {
		row[id] = math.Inf(-1)
	}
}

// after applies the bans that come after the log-softmax in beam search
// (and on the raw logits elsewhere) to row, the scores of the token that
// follows seq; last says whether this is the row's last step.
func (c Constraints) after(seq []int, row []float64, last bool) {
	if c.Penalizes() {
		penalize(seq, row, c.RepetitionPenalty)
	}
	for _, w := range c.BadWords {
		prefix, tok := w[:len(w)-1], w[len(w)-1]
		if len(prefix) <= len(seq) && slices.Equal(seq[len(seq)-len(prefix):], prefix) {
			row[tok] = math.Inf(-1)
		}
	}
	if n := c.NoRepeatNGramSize; n > 0 && len(seq)+1 >= n {
		// Every n-gram of seq whose first n−1 tokens are seq's last n−1
		// bans its last token (Hugging Face's _get_ngrams and
		// _get_generated_ngrams, over the whole row).
		tail := seq[len(seq)-(n-1):]
		for i := 0; i+n <= len(seq); i++ {
			if slices.Equal(seq[i:i+n-1], tail) {
				row[seq[i+n-1]] = math.Inf(-1)
			}
		}
	}
	if last && len(c.ForcedEOS) > 0 {
		for i := range row {
			row[i] = math.Inf(-1)
		}
		for _, id := range c.ForcedEOS {
			row[id] = 0
		}
	}
}

// process returns the logits of the token after seq with the constraints
// applied, in dst (reused when it holds len(logits) values): Suppress, then
// the others on the raw logits, as Sample and Hugging Face's greedy and
// sampling decoders apply them.
func (c Constraints) process(seq []int, logits, dst []float64, last bool) []float64 {
	if len(dst) != len(logits) {
		dst = make([]float64, len(logits))
	}
	copy(dst, logits)
	c.suppress(dst)
	c.after(seq, dst, last)
	return dst
}

// logSoftmax writes to dst the log-softmax of logits with the Suppress
// tokens left out, then applies the other constraints to it, as Hugging
// Face's beam search does (model hook, log_softmax, logits processors). It
// reports a row whose every token is suppressed.
func (c Constraints) logSoftmax(seq []int, logits, dst []float64, last bool) ([]float64, error) {
	if len(dst) != len(logits) {
		dst = make([]float64, len(logits))
	}
	copy(dst, logits)
	c.suppress(dst)
	lse := LogSumExp(dst)
	if math.IsInf(lse, -1) || math.IsNaN(lse) && math.IsInf(dst[argmax(dst)], -1) {
		return nil, fmt.Errorf("decode: the constraints ban every token: every token of the vocabulary is suppressed")
	}
	for i, x := range dst {
		dst[i] = x - lse
	}
	c.after(seq, dst, last)
	if c.Renormalize {
		if math.IsInf(dst[argmax(dst)], -1) {
			return nil, fmt.Errorf("decode: the constraints ban every token")
		}
		lse := LogSumExp(dst)
		for i, x := range dst {
			dst[i] = x - lse
		}
	}
	return dst, nil
}

// penalize applies RepetitionPenaltyLogitsProcessor to row, the scores of
// the token after seq: each token of seq, once, gets score·p where its
// score is negative and score/p otherwise.
func penalize(seq []int, row []float64, p float64) {
	seen := slices.Clone(seq)
	slices.Sort(seen)
	for _, tok := range slices.Compact(seen) {
		if tok < 0 || tok >= len(row) {
			continue
		}
		if x := row[tok]; x < 0 {
			row[tok] = x * p
		} else {
			row[tok] = x / p
		}
	}
}

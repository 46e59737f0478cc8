// Package decode turns a model's next-token logits into sequences: greedy
// and sampled decoding (temperature, top-k, top-p) in Sample, and beam
// search with n-best lists and GNMT's or Hugging Face's length penalty in
// BeamSearch. Both stop rows at EOS tokens and stop strings, and both
// follow Hugging Face's token bans (Constraints: bad words, no repeated
// n-grams, eos forced at the length limit), which a checkpoint's
// generation_config.json or config.json sets (ReadGeneration).
//
// Sample and BeamSearch keep no state between calls: calls on several
// goroutines at once are safe, each with its own Stepper.
//
// It knows nothing of the model: it is handed a Stepper, which maps every
// row's tokens so far to the logits of the token after them, and which
// keeps whatever state it likes between calls (a KV cache, an encoder's
// outputs, a sliding window). Beam search tells it, through Reorder, which
// row each row continues, so that a cache can follow. This is the cut of
// Hugging Face's generation/utils.py (the model's forward, with
// _reorder_cache for beams) and of GoMLX's generation package (an
// incremental step function), written for zoo's Gorgonia models.
package decode

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Stepper runs a model one token forward for a batch of R rows. Sample
// and BeamSearch call it from their caller's goroutine only, so a Stepper
// need not be safe for concurrent use; one serves one decoding at a time.
type Stepper interface {
	// Step returns the logits (R, V) of the token that follows each row of
	// seqs, where seqs[r] holds row r's prompt and every token chosen so
	// far. Between two calls every row grows by exactly one token, so a
	// cached step needs only each row's last token. Rows may differ in
	// length (prompts of different lengths). seqs belongs to the decoder:
	// Step must not change it or keep it past the call. The decoder reads
	// the logits before the next call and never writes them, so Step may
	// reuse one buffer.
	Step(seqs [][]int) (logits [][]float64, err error)
	// Reorder makes row r continue from the state that row parents[r] had
	// after the last Step, for every r in [0, R): beam search calls it
	// after choosing the next beams and before the next Step (parents is
	// often the identity, which an implementation may skip). A stepper
	// that keeps no per-row state can do nothing.
	Reorder(parents []int) error
}

// StepFunc is a Stepper that keeps no state between steps: it reruns each
// whole row, so Reorder has nothing to do.
type StepFunc func(seqs [][]int) ([][]float64, error)

// Step calls f.
func (f StepFunc) Step(seqs [][]int) ([][]float64, error) { return f(seqs) }

// Reorder does nothing: f reads the rows afresh each step.
func (f StepFunc) Reorder([]int) error { return nil }

// Hypothesis is one beam-search output.
type Hypothesis struct {
	Tokens   []int   // the new tokens after the prompt, without the EOS token that ended it
	LogProb  float64 // log P(Tokens, then the EOS token if EOS | prompt)
	Score    float64 // LogProb with the length penalty: what hypotheses are ranked by
	Finished bool    // ended with an EOS token or a stop string, not at the length limit
	EOS      bool    // ended with an EOS token, which counts in LogProb and the length but is left out of Tokens
}

// Len is the length the length penalty counts: the tokens and the EOS
// token that ended them.
func (h Hypothesis) Len() int {
	if h.EOS {
		return len(h.Tokens) + 1
	}
	return len(h.Tokens)
}

// LengthPenalty is GNMT's lp(Y) = ((5 + |Y|) / 6)^α (Wu et al. 2016, §7,
// https://arxiv.org/abs/1609.08144): a hypothesis of n tokens scores
// log P / lp. α = 0 ranks by log P; larger α favours longer outputs.
func LengthPenalty(n int, alpha float64) float64 {
	return math.Pow((5+float64(n))/6, alpha)
}

// ReorderRows permutes the R = len(parents) equal blocks of data, one per
// row, so that block r becomes the old block parents[r]: the Reorder of a
// cache stored row-major. Only rows that change are written, and only
// blocks that another row reads are saved first. scratch is reused when it
// holds len(data) values and returned for the next call.
func ReorderRows[E any](data []E, parents []int, scratch []E) []E {
	if len(parents) == 0 {
		return scratch
	}
	return ReorderCache(data, parents, scratch, 1, len(data)/len(parents))
}

// ReorderCache is ReorderRows for a KV cache (R·h, C, d_head) whose first
// slots alone hold tokens: each row's block is parts equal parts (h, one
// per head), and only the first used values of each (the occupied slots
// times d_head) are moved. 0 ≤ used ≤ the part's length.
func ReorderCache[E any](data []E, parents []int, scratch []E, parts, used int) []E {
	if len(parents) == 0 || identity(parents) {
		return scratch
	}
	if len(scratch) != len(data) {
		scratch = make([]E, len(data))
	}
	part := len(data) / len(parents) / parts
	move := func(dst, src []E, to, from int) {
		for i := 0; i < parts; i++ {
			d, s := (to*parts+i)*part, (from*parts+i)*part
			copy(dst[d:d+used], src[s:s+used])
		}
	}
	saved := make([]bool, len(parents))
	for r, p := range parents {
		if r != p && !saved[p] {
			move(scratch, data, p, p)
			saved[p] = true
		}
	}
	for r, p := range parents {
		if r != p {
			move(data, scratch, r, p)
		}
	}
	return scratch
}

func identity(parents []int) bool {
	for r, p := range parents {
		if r != p {
			return false
		}
	}
	return true
}

// step runs st and checks that it returned one row of V logits per row of
// seqs, V the same every row and every step (v is 0 until the first step).
func step(st Stepper, seqs [][]int, t int, v *int) ([][]float64, error) {
	logits, err := st.Step(seqs)
	if err != nil {
		return nil, fmt.Errorf("decode: step %d: %w", t, err)
	}
	if len(logits) != len(seqs) {
		return nil, fmt.Errorf("decode: step %d returned logits for %d rows, want %d", t, len(logits), len(seqs))
	}
	for r, l := range logits {
		if *v == 0 {
			*v = len(l)
		}
		if len(l) == 0 || len(l) != *v {
			return nil, fmt.Errorf("decode: step %d returned %d logits for row %d, want a vocabulary of %d", t, len(l), r, *v)
		}
	}
	return logits, nil
}

// checkPrompts reports an empty batch or prompt: every row needs a last
// token to continue from.
func checkPrompts(prompts [][]int) error {
	if len(prompts) == 0 {
		return fmt.Errorf("decode: no prompts")
	}
	for r, p := range prompts {
		if len(p) == 0 {
			return fmt.Errorf("decode: prompt %d is empty; start it with a token such as bos", r)
		}
	}
	return nil
}

// stopper tells when a row's new tokens end it.
type stopper struct {
	eos     []int
	strings []string
	decode  func([]int) string
}

func (s stopper) isEOS(tok int) bool {
	for _, e := range s.eos {
		if tok == e {
			return true
		}
	}
	return false
}

// hasStopString reports whether the text of tokens holds a stop string.
func (s stopper) hasStopString(tokens []int) bool {
	if len(s.strings) == 0 {
		return false
	}
	text := s.decode(tokens)
	for _, x := range s.strings {
		if x != "" && strings.Contains(text, x) {
			return true
		}
	}
	return false
}

// endsWith reports whether tokens followed by tok hold a stop string.
func (s stopper) endsWith(tokens []int, tok int) bool {
	return len(s.strings) > 0 && s.hasStopString(append(slices.Clone(tokens), tok))
}

func checkStops(stopStrings []string, decode func([]int) string) error {
	if len(stopStrings) > 0 && decode == nil {
		return fmt.Errorf("decode: stop strings need a Decode function to turn tokens into text")
	}
	return nil
}

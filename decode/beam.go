package decode

import (
	"fmt"
	"math"
	"slices"

	"github.com/d73a19ff/zoo/internal/parallel"
)

// BeamConfig sets beam search.
type BeamConfig struct {
	Beam  int // beams per prompt, ≥ 1
	NBest int // hypotheses returned per prompt, at most Beam; 0 means 1
	// LengthPenalty is α: a hypothesis's score is log P / lp(|y|, α),
	// |y| counting the EOS token, with lp as LengthPenaltyStyle says; 0
	// ranks by log P.
	LengthPenalty float64
	// LengthPenaltyStyle is the penalty's formula; the zero value is
	// GNMT's.
	LengthPenaltyStyle LengthPenaltyStyle
	MaxNewTokens       int      // most tokens per hypothesis, the EOS token included, > 0
	EarlyStopping      Stopping // when a prompt is done; the zero value stops at Beam finished hypotheses
	EOS                []int    // tokens that finish a hypothesis
	StopStrings        []string
	Decode             func(tokens []int) string // turns a hypothesis's tokens into text, for StopStrings
	// Constraints ban tokens as Hugging Face's logits processors do; beam
	// search applies Suppress before the log-softmax and the others after
	// it.
	Constraints
}

// LengthPenaltyStyle is how beam search divides a hypothesis's log P by a
// function of its length |y| (its new tokens, an EOS token included).
type LengthPenaltyStyle int

const (
	// GNMTPenalty is GNMT's lp = ((5 + |y|) / 6)^α (Wu et al. 2016, §7):
	// the zoo's default, for α ≥ 0.
	GNMTPenalty LengthPenaltyStyle = iota
	// HFPenalty is Hugging Face's length_penalty: lp = |y|^α, with |y| the
	// generated length as transformers' BeamHypotheses.add counts it since
	// 4.36 (generated_len: the new tokens and the EOS token, without the
	// prompt or decoder start token). α may be negative (favouring shorter
	// outputs); transformers' default is 1. With HFPenalty, early stopping
	// false and never follow BeamHypotheses.is_done too (see Stopping).
	HFPenalty
)

// ParseLengthPenaltyStyle reads "gnmt" or "hf".
func ParseLengthPenaltyStyle(s string) (LengthPenaltyStyle, error) {
	switch s {
	case "gnmt":
		return GNMTPenalty, nil
	case "hf":
		return HFPenalty, nil
	}
	return 0, fmt.Errorf("decode: length penalty style %q: want gnmt (((5+|y|)/6)^α) or hf (|y|^α, Hugging Face's)", s)
}

// String is the name ParseLengthPenaltyStyle reads.
func (s LengthPenaltyStyle) String() string {
	switch s {
	case GNMTPenalty:
		return "gnmt"
	case HFPenalty:
		return "hf"
	}
	return fmt.Sprintf("LengthPenaltyStyle(%d)", int(s))
}

// Penalty is lp(n, α) in style s: what a hypothesis of n tokens divides its
// log P by.
func (s LengthPenaltyStyle) Penalty(n int, alpha float64) float64 {
	if s == HFPenalty {
		return math.Pow(float64(n), alpha)
	}
	return LengthPenalty(n, alpha)
}

// Stopping says when beam search is done with a prompt, as Hugging Face's
// generation option early_stopping does. A prompt always needs Beam
// finished hypotheses first; after that:
type Stopping int

const (
	// StopAtBeam: done at once (early_stopping=True). Hypotheses that
	// finish early are short, and with a length penalty α > 0 a longer one
	// still open might have scored higher.
	StopAtBeam Stopping = iota
	// StopHeuristic: done when the best open beam, scored as if it ended
	// at its current length, no longer beats the worst of the Beam best
	// finished ones (early_stopping=False, generate's default). With
	// HFPenalty the "best open beam" is, as in transformers'
	// BeamSearchScorer, the best of the step's 2·Beam candidates, those
	// that ended included.
	StopHeuristic
	// StopNever: done only when no open beam can beat the worst of the
	// Beam best finished ones at any length up to MaxNewTokens
	// (early_stopping="never"): log P only falls as a beam grows, so its
	// best possible score is its log P now over the largest length penalty
	// (with HFPenalty and α ≤ 0, the current length's, as transformers has
	// it).
	StopNever
)

// ParseStopping reads Hugging Face's early_stopping values: "true",
// "false" or "never".
func ParseStopping(s string) (Stopping, error) {
	switch s {
	case "true", "True":
		return StopAtBeam, nil
	case "false", "False":
		return StopHeuristic, nil
	case "never":
		return StopNever, nil
	}
	return 0, fmt.Errorf("decode: early stopping %q: want true, false or never", s)
}

// String is the early_stopping value of s.
func (s Stopping) String() string {
	switch s {
	case StopAtBeam:
		return "true"
	case StopHeuristic:
		return "false"
	case StopNever:
		return "never"
	}
	return fmt.Sprintf("Stopping(%d)", int(s))
}

// Validate reports settings that cannot decode.
func (c BeamConfig) Validate() error {
	switch {
	case c.Beam < 1:
		return fmt.Errorf("decode: beam size %d must be at least 1 (1 is greedy)", c.Beam)
	case c.NBest < 0 || c.NBest > c.Beam:
		return fmt.Errorf("decode: n-best %d must be between 1 and the beam size %d", c.NBest, c.Beam)
	case c.MaxNewTokens <= 0:
		return fmt.Errorf("decode: max_new_tokens %d must be positive", c.MaxNewTokens)
	case c.LengthPenaltyStyle != GNMTPenalty && c.LengthPenaltyStyle != HFPenalty:
		return fmt.Errorf("decode: unknown length penalty style %v", c.LengthPenaltyStyle)
	case c.LengthPenaltyStyle == GNMTPenalty && (!(c.LengthPenalty >= 0) || math.IsInf(c.LengthPenalty, 0)):
		return fmt.Errorf("decode: length penalty %g must be a finite α ≥ 0 for GNMT's penalty", c.LengthPenalty)
	case math.IsNaN(c.LengthPenalty) || math.IsInf(c.LengthPenalty, 0):
		return fmt.Errorf("decode: length penalty %g must be finite", c.LengthPenalty)
	case c.EarlyStopping < StopAtBeam || c.EarlyStopping > StopNever:
		return fmt.Errorf("decode: unknown early stopping %v", c.EarlyStopping)
	}
	if err := c.Constraints.Validate(); err != nil {
		return err
	}
	return checkStops(c.StopStrings, c.Decode)
}

// BeamSearch continues each of B prompts keeping cfg.Beam = K hypotheses,
// and returns each prompt's cfg.NBest best hypotheses (B lists), best
// first: the n-best list.
//
// st decodes R = B·K rows: rows [s·K, (s+1)·K) are prompt s's beams, and
// all start as the prompt. Every step extends each live beam by every
// token, scored by its log-softmax, and keeps the 2·K best extensions
// (ties going to the smaller beam, then the smaller token, so that a beam
// of one is greedy decoding): one ending in an EOS token or a stop string
// finishes a hypothesis if it ranks among the first K, the others become
// the next live beams. A prompt is done once it has K finished hypotheses
// (early stopping); decoding stops when every prompt is done or after
// MaxNewTokens steps, when the live beams join the finished ones. After
// each step st.Reorder learns which row every row continues. Rows that
// hold no beam (at the start, K−1 of each prompt's rows; later, a done
// prompt's rows or a shortage of extensions) still grow by their last
// token and are never scored.
//
// Safe for concurrent use by multiple goroutines, each call with a
// Stepper of its own: a call keeps its state to itself, and calls st and
// Decode on the calling goroutine.
func BeamSearch(st Stepper, prompts [][]int, cfg BeamConfig) ([][]Hypothesis, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkPrompts(prompts); err != nil {
		return nil, err
	}
	b, k := len(prompts), cfg.Beam
	if k > math.MaxInt/b {
		return nil, fmt.Errorf("decode: %d prompts × beam %d rows overflow int; lower the beam", b, k)
	}
	rows := b * k
	stop := stopper{eos: cfg.EOS, strings: cfg.StopStrings, decode: cfg.Decode}
	seqs := make([][]int, rows)
	logp := make([]float64, rows) // each live beam's log-probability; −∞ for none
	for r := range seqs {
		seqs[r] = slices.Clone(prompts[r/k])
		if r%k != 0 {
			logp[r] = math.Inf(-1) // at the start all beams are the same: keep one
		}
	}
	hyp := func(s int, tokens []int, logProb float64, finished, eos bool) Hypothesis {
		h := Hypothesis{Tokens: slices.Clone(tokens[len(prompts[s]):]), LogProb: logProb, Finished: finished, EOS: eos}
		h.Score = h.LogProb / cfg.LengthPenaltyStyle.Penalty(h.Len(), cfg.LengthPenalty)
		return h
	}
	finished := make([][]Hypothesis, b)
	done := make([]bool, b)
	parents := make([]int, rows)
	lse := make([]float64, rows)
	heaps := make([]candidates, b) // each prompt's best extensions
	constrained := cfg.Constraints.active()
	var scores [][]float64 // with constraints: each row's log-softmax, constrained; reused
	errs := make([]error, b)
	v := 0
	for t := 0; t < cfg.MaxNewTokens && slices.Contains(done, false); t++ {
		logits, err := step(st, seqs, t, &v)
		if err != nil {
			return nil, err
		}
		if constrained && t == 0 {
			if err := cfg.Constraints.checkVocab(v); err != nil {
				return nil, err
			}
			scores = make([][]float64, rows)
		}
		last := t == cfg.MaxNewTokens-1
		// Log-softmax normalisers and the best extensions, prompt by
		// prompt: each prompt's work is its own, so the cores share it.
		parallel.For(b, k*v, func(lo, hi int) {
			for s := lo; s < hi; s++ {
				if done[s] {
					continue
				}
				rowsOf := logits[s*k : (s+1)*k]
				for r := s * k; r < (s+1)*k; r++ {
					if math.IsInf(logp[r], -1) {
						continue
					}
					if !constrained {
						lse[r] = LogSumExp(logits[r])
						continue
					}
					if scores[r], errs[s] = cfg.Constraints.logSoftmax(seqs[r], logits[r], scores[r], last); errs[s] != nil {
						return
					}
					lse[r] = 0
				}
				if constrained {
					rowsOf = scores[s*k : (s+1)*k]
				}
				heaps[s] = heaps[s].best(rowsOf, lse[s*k:(s+1)*k], logp[s*k:(s+1)*k], 2*k)
			}
		})
		for s, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("decode: step %d, prompt %d: %w", t, s, err)
			}
		}
		next := make([][]int, rows)
		nextLogp := make([]float64, rows)
		for s := 0; s < b; s++ {
			lo := s * k
			if done[s] {
				for j := lo; j < lo+k; j++ {
					parents[j], next[j], nextLogp[j] = j, append(seqs[j], seqs[j][len(seqs[j])-1]), math.Inf(-1)
				}
				continue
			}
			live := 0
			for rank, c := range heaps[s] {
				if live == k {
					break
				}
				parent := seqs[lo+c.beam]
				if eos := stop.isEOS(c.id); eos || stop.endsWith(parent[len(prompts[s]):], c.id) {
					if rank < k {
						tokens := parent
						if !eos {
							tokens = append(slices.Clone(parent), c.id)
						}
						finished[s] = append(finished[s], hyp(s, tokens, c.score, true, eos))
					}
					continue
				}
				r := lo + live
				parents[r], nextLogp[r] = lo+c.beam, c.score
				next[r] = append(slices.Clone(parent), c.id)
				live++
			}
			for ; live < k; live++ { // fewer extensions than beams: rows with no beam
				r := lo + live
				parents[r], next[r], nextLogp[r] = lo, append(slices.Clone(seqs[lo]), seqs[lo][len(seqs[lo])-1]), math.Inf(-1)
			}
			best := math.Inf(-1) // the best open beam's log P (candidates come best first)
			if live > 0 && !math.IsInf(nextLogp[lo], -1) {
				best = nextLogp[lo]
			}
			if cfg.LengthPenaltyStyle == HFPenalty && len(heaps[s]) > 0 {
				best = heaps[s][0].score // BeamSearchScorer: next_scores.max(), ended candidates included
			}
			done[s] = cfg.done(finished[s], best, t+1)
		}
		if err := st.Reorder(parents); err != nil {
			return nil, fmt.Errorf("decode: reorder after step %d: %w", t, err)
		}
		seqs, logp = next, nextLogp
	}
	out := make([][]Hypothesis, b)
	for s := range out {
		hyps := finished[s]
		for j := 0; j < k && !done[s]; j++ {
			if r := s*k + j; !math.IsInf(logp[r], -1) {
				hyps = append(hyps, hyp(s, seqs[r], logp[r], false, false))
			}
		}
		slices.SortStableFunc(hyps, func(a, b Hypothesis) int {
			switch {
			case a.Score > b.Score:
				return -1
			case a.Score < b.Score:
				return 1
			}
			return 0
		})
		out[s] = hyps[:min(max(cfg.NBest, 1), len(hyps))]
	}
	return out, nil
}

// done reports whether a prompt with these finished hypotheses is done
// when its best open beam has log-probability best after n tokens.
func (c BeamConfig) done(finished []Hypothesis, best float64, n int) bool {
	k := c.Beam
	if len(finished) < k {
		return false
	}
	if c.EarlyStopping == StopAtBeam || math.IsInf(best, -1) {
		return true
	}
	scores := make([]float64, len(finished))
	for i, h := range finished {
		scores[i] = h.Score
	}
	slices.Sort(scores)
	worst := scores[len(scores)-k] // the worst of the k best
	if c.EarlyStopping == StopNever && (c.LengthPenaltyStyle != HFPenalty || c.LengthPenalty > 0) {
		n = c.MaxNewTokens
	}
	return worst >= best/c.LengthPenaltyStyle.Penalty(n, c.LengthPenalty)
}

// candidate is one extension of a beam: a token after beam j, and its
// log-probability.
type candidate struct {
	score    float64
	beam, id int
}

// worseCandidate orders candidates by score, ties going to the smaller
// (beam, id).
func worseCandidate(a, b candidate) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.beam > b.beam || (a.beam == b.beam && a.id > b.id)
}

// candidates is a min-heap of the best extensions so far: the worst at 0.
type candidates []candidate

// best returns the n best extensions of the beams, best first, reusing
// h's storage: beam j's token id scores alive[j] + logits[j][id] − lse[j],
// and beams whose alive is −∞ are skipped.
func (h candidates) best(logits [][]float64, lse, alive []float64, n int) candidates {
	h = h[:0]
	for j, base := range alive {
		if math.IsInf(base, -1) {
			continue
		}
		row, l, id := logits[j], lse[j], 0
		for ; id < len(row) && len(h) < n; id++ {
			h = append(h, candidate{score: base + (row[id] - l), beam: j, id: id})
			h.up(len(h) - 1)
		}
		if len(h) == 0 {
			continue
		}
		// Candidates come in (beam, id) order, so one that ties the worst
		// kept is worse than it: only a higher score enters (as
		// worseCandidate has it, NaN never does).
		worst := h[0].score
		for ; id < len(row); id++ {
			if score := base + (row[id] - l); score > worst {
				h[0] = candidate{score: score, beam: j, id: id}
				h.down(0, len(h))
				worst = h[0].score
			}
		}
	}
	for m := len(h) - 1; m > 0; m-- { // heap sort, the worst to the end
		h[0], h[m] = h[m], h[0]
		h.down(0, m)
	}
	return h
}

func (h candidates) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !worseCandidate(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (h candidates) down(i, n int) {
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && worseCandidate(h[c+1], h[c]) {
			c++
		}
		if !worseCandidate(h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

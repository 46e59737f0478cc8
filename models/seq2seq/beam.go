package seq2seq

import (
	"math"
	"slices"
)

// BeamSearch decodes each source (token ids without eos) keeping cfg.Beam
// hypotheses, and returns each source's cfg.NBest best outputs ordered by
// score, best first (the n-best list, the seed's top_beams).
//
// Every step extends each live beam by every token and keeps the 2·Beam
// best extensions: one ending in eos finishes a hypothesis if it ranks
// among the first Beam, the others become the next live beams. A source is
// done once it has Beam finished hypotheses (early stopping); decoding stops
// when every source is done or at cfg.MaxLen, where the live beams join the
// finished ones. Scores carry GNMT's length penalty. Ties go to the smaller
// (beam, token), so a beam of one is greedy decoding.
func (m *Model) BeamSearch(srcs [][]int, cfg DecodeConfig) ([][]Hypothesis, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	nbest := max(cfg.NBest, 1)
	k := cfg.Beam
	st, err := m.start(srcs, k, cfg)
	if err != nil {
		return nil, err
	}
	defer st.close()
	b, eos := len(srcs), m.Config.EOSTokenID
	rows := b * k
	prefix := make([][]int, rows)
	logp := make([]float64, rows) // each live beam's log-probability; −∞ for none
	for r := range prefix {
		prefix[r] = []int{m.Config.BOSTokenID}
		if r%k != 0 {
			logp[r] = math.Inf(-1) // at the start all beams are the same: keep one
		}
	}
	finished := make([][]Hypothesis, b)
	done := make([]bool, b)
	parents := make([]int, rows)
	maxLen := m.maxLen(cfg)
	for t := 0; t < maxLen && slices.Contains(done, false); t++ {
		lp, err := st.next(prefix, t)
		if err != nil {
			return nil, err
		}
		next := make([][]int, rows)
		nextLogp := make([]float64, rows)
		for s := 0; s < b; s++ {
			lo := s * k
			if done[s] {
				for j := 0; j < k; j++ {
					parents[lo+j], next[lo+j], nextLogp[lo+j] = lo+j, append(prefix[lo+j], eos), math.Inf(-1)
				}
				continue
			}
			live := 0
			for rank, c := range best(lp[lo:lo+k], logp[lo:lo+k], 2*k) {
				if live == k {
					break
				}
				if c.id == eos {
					if rank < k {
						h := Hypothesis{Tokens: slices.Clone(prefix[lo+c.beam][1:]), LogProb: c.score, Finished: true}
						h.Score = h.LogProb / lengthPenalty(outLen(h), cfg.LengthPenalty)
						finished[s] = append(finished[s], h)
					}
					continue
				}
				r := lo + live
				parents[r], nextLogp[r] = lo+c.beam, c.score
				next[r] = append(slices.Clone(prefix[lo+c.beam]), c.id)
				live++
			}
			for ; live < k; live++ { // fewer extensions than beams: dead rows
				r := lo + live
				parents[r], next[r], nextLogp[r] = lo, append(slices.Clone(prefix[lo]), eos), math.Inf(-1)
			}
			done[s] = len(finished[s]) >= k
		}
		st.reorder(parents)
		prefix, logp = next, nextLogp
	}
	out := make([][]Hypothesis, b)
	for s := range out {
		hyps := finished[s]
		for j := 0; j < k && !done[s]; j++ {
			if r := s*k + j; !math.IsInf(logp[r], -1) {
				h := Hypothesis{Tokens: slices.Clone(prefix[r][1:]), LogProb: logp[r]}
				h.Score = h.LogProb / lengthPenalty(outLen(h), cfg.LengthPenalty)
				hyps = append(hyps, h)
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
		out[s] = hyps[:min(nbest, len(hyps))]
	}
	return out, nil
}

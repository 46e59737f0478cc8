package seq2seq

import (
	"container/heap"
	"fmt"
	"math"
	"slices"
)

// DecodeConfig sets greedy and beam-search decoding.
type DecodeConfig struct {
	Beam          int     // beams per source (BeamSearch); must be at least 1
	NBest         int     // hypotheses returned per source, at most Beam; 0 means 1
	LengthPenalty float64 // GNMT's α (Wu et al. 2016, §7): score = log P / ((5+|y|)/6)^α; 0 ranks by log P
	MaxLen        int     // most tokens per output, eos included; 0 means max_len
	// NoCache reruns the whole target prefix at every step instead of
	// reading a KV cache: slower, and the reference the cache must equal.
	NoCache bool
}

// Validate reports settings that cannot decode.
func (c DecodeConfig) Validate() error {
	switch {
	case c.Beam < 1:
		return fmt.Errorf("seq2seq decode: beam size %d must be at least 1 (1 is greedy)", c.Beam)
	case c.NBest < 0 || c.NBest > c.Beam:
		return fmt.Errorf("seq2seq decode: n-best %d must be between 1 and the beam size %d", c.NBest, c.Beam)
	case c.MaxLen < 0:
		return fmt.Errorf("seq2seq decode: max length %d is negative", c.MaxLen)
	case !(c.LengthPenalty >= 0) || math.IsInf(c.LengthPenalty, 0):
		return fmt.Errorf("seq2seq decode: length penalty %g must be a finite α ≥ 0", c.LengthPenalty)
	}
	return nil
}

// Hypothesis is one decoded output.
type Hypothesis struct {
	Tokens   []int   // without bos and eos
	LogProb  float64 // log P(tokens, eos | source), eos counted only if Finished
	Score    float64 // LogProb with the length penalty: what the beams are ranked by
	Finished bool    // ended with eos, not at the length limit
}

// Greedy decodes each source (token ids without eos) by taking the most
// likely token at every step, and returns each output without bos and eos.
// Ties go to the smaller id.
func (m *Model) Greedy(srcs [][]int, cfg DecodeConfig) ([][]int, error) {
	cfg.Beam, cfg.NBest = 1, 1 // greedy has one beam whatever the config says
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hyps, err := m.greedy(srcs, cfg)
	if err != nil {
		return nil, err
	}
	out := make([][]int, len(hyps))
	for i, h := range hyps {
		out[i] = h[0].Tokens
	}
	return out, nil
}

// maxLen is the number of decoding steps allowed.
func (m *Model) maxLen(cfg DecodeConfig) int {
	if cfg.MaxLen > 0 {
		return cfg.MaxLen
	}
	return m.Config.MaxLen
}

// start encodes the sources, each repeated for beams rows, and returns the
// decoder's stepper over them.
func (m *Model) start(srcs [][]int, beams int, cfg DecodeConfig) (stepper, error) {
	e, err := m.encodeSources(srcs, beams)
	if err != nil {
		return nil, err
	}
	if cfg.NoCache {
		return &fullStep{m: m, e: e, graphs: map[int]*fullGraph{}}, nil
	}
	return m.newCachedStep(e, m.maxLen(cfg))
}

// greedy is the plain argmax loop, kept apart from beam search so that a
// beam of one can be tested against it.
func (m *Model) greedy(srcs [][]int, cfg DecodeConfig) ([][]Hypothesis, error) {
	st, err := m.start(srcs, 1, cfg)
	if err != nil {
		return nil, err
	}
	defer st.close()
	eos := m.Config.EOSTokenID
	prefix := make([][]int, len(srcs))
	out := make([][]Hypothesis, len(srcs))
	for r := range prefix {
		prefix[r] = []int{m.Config.BOSTokenID}
		out[r] = []Hypothesis{{}}
	}
	done := 0
	for t := 0; t < m.maxLen(cfg) && done < len(srcs); t++ {
		lp, err := st.next(prefix, t)
		if err != nil {
			return nil, err
		}
		for r := range prefix {
			h := &out[r][0]
			if h.Finished {
				prefix[r] = append(prefix[r], eos)
				continue
			}
			tok := argmax(lp[r])
			h.LogProb += lp[r][tok]
			prefix[r] = append(prefix[r], tok)
			if tok == eos {
				h.Finished = true
				done++
			} else {
				h.Tokens = append(h.Tokens, tok)
			}
		}
	}
	for r := range out {
		h := &out[r][0]
		h.Score = h.LogProb / lengthPenalty(outLen(*h), cfg.LengthPenalty)
	}
	return out, nil
}

func argmax(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// lengthPenalty is GNMT's lp(Y) = ((5 + |Y|) / 6)^α.
func lengthPenalty(n int, alpha float64) float64 {
	return math.Pow((5+float64(n))/6, alpha)
}

// outLen counts eos in a finished output's length.
func outLen(h Hypothesis) int {
	if h.Finished {
		return len(h.Tokens) + 1
	}
	return len(h.Tokens)
}

// candidate is one extension of a beam: a token after beam j.
type candidate struct {
	score    float64
	beam, id int
}

// worse orders candidates by score, ties going to the smaller (beam, id).
func worse(a, b candidate) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.beam > b.beam || (a.beam == b.beam && a.id > b.id)
}

// topK keeps the k best candidates in a min-heap.
type topK []candidate

func (h topK) Len() int           { return len(h) }
func (h topK) Less(i, j int) bool { return worse(h[i], h[j]) }
func (h topK) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *topK) Push(x any)        { *h = append(*h, x.(candidate)) }
func (h *topK) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// best returns the k best of the beams' extensions, best first, skipping
// beams that are not alive.
func best(lp [][]float64, alive []float64, k int) []candidate {
	h := make(topK, 0, k+1)
	for j, base := range alive {
		if math.IsInf(base, -1) {
			continue
		}
		for id, v := range lp[j] {
			c := candidate{score: base + v, beam: j, id: id}
			if len(h) < k {
				heap.Push(&h, c)
			} else if worse(h[0], c) {
				h[0] = c
				heap.Fix(&h, 0)
			}
		}
	}
	out := []candidate(h)
	slices.SortFunc(out, func(a, b candidate) int {
		if worse(a, b) {
			return 1
		}
		if worse(b, a) {
			return -1
		}
		return 0
	})
	return out
}

package gpt

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// GenerateConfig sets how Generate decodes. Start from Greedy or Sampling.
type GenerateConfig struct {
	MaxNewTokens    int     // tokens to add to each prompt, > 0
	Temperature     float64 // 0 is greedy (argmax); > 0 samples from softmax(logits/Temperature)
	TopK            int     // sample among the k most likely tokens; 0 keeps all
	TopP            float64 // nucleus: sample among the fewest tokens whose mass reaches TopP, in (0, 1]; 1 keeps all
	Seed            uint64  // seeds sampling: equal seeds give equal tokens
	EOS             []int   // stop a row after any of these tokens (it is kept)
	StopStrings     []string
	Decode          func(tokens []int) string // turns a row's new tokens into text, for StopStrings
	NoCache         bool                      // recompute the whole context every step instead of using the KV cache
	NoSlidingWindow bool                      // a context longer than n_positions is an error instead of being cropped to its last n_positions tokens
	OnToken         func(row, token int)      // called with each new token as it is produced
}

// Greedy decodes n tokens by argmax.
func Greedy(n int) GenerateConfig { return GenerateConfig{MaxNewTokens: n, TopP: 1} }

// Sampling samples n tokens at the given temperature with a seed.
func Sampling(n int, temperature float64, seed uint64) GenerateConfig {
	return GenerateConfig{MaxNewTokens: n, Temperature: temperature, TopP: 1, Seed: seed}
}

// Validate reports settings that cannot be used.
func (c GenerateConfig) Validate() error {
	switch {
	case c.MaxNewTokens <= 0:
		return fmt.Errorf("gpt generate: max_new_tokens %d must be positive", c.MaxNewTokens)
	case c.Temperature < 0 || math.IsNaN(c.Temperature):
		return fmt.Errorf("gpt generate: temperature %g must not be negative (0 is greedy)", c.Temperature)
	case !(c.TopP > 0 && c.TopP <= 1):
		return fmt.Errorf("gpt generate: top_p %g is outside (0, 1]; 1 turns nucleus sampling off", c.TopP)
	case c.TopK < 0:
		return fmt.Errorf("gpt generate: top_k %d is negative; 0 turns it off", c.TopK)
	case len(c.StopStrings) > 0 && c.Decode == nil:
		return fmt.Errorf("gpt generate: stop strings need a Decode function to turn tokens into text")
	}
	return nil
}

// sampler picks the next token of each row from its logits.
type sampler struct {
	cfg  GenerateConfig
	rngs []*rand.Rand
	idx  []int     // scratch: candidate token ids
	prob []float64 // scratch: their probabilities
}

func newSampler(cfg GenerateConfig, rows int) *sampler {
	s := &sampler{cfg: cfg}
	for r := 0; r < rows; r++ {
		s.rngs = append(s.rngs, rand.New(rand.NewPCG(cfg.Seed, uint64(r))))
	}
	return s
}

// next picks a token from one row's logits (V). Every call draws exactly one
// random number in sampling mode, so cached and uncached decoding stay in
// step. Only top-k and top-p need the tokens ordered by probability; plain
// temperature sampling draws in id order without sorting.
func (s *sampler) next(row int, logits []float64) int {
	best := 0
	for j, v := range logits {
		if v > logits[best] {
			best = j
		}
	}
	if s.cfg.Temperature == 0 {
		return best
	}
	s.idx, s.prob = s.idx[:0], s.prob[:0]
	for j := range logits {
		s.idx = append(s.idx, j)
	}
	filtered := (s.cfg.TopK > 0 && s.cfg.TopK < len(logits)) || s.cfg.TopP < 1
	if filtered {
		// Most likely first; ties by token id, so the order is deterministic.
		sort.SliceStable(s.idx, func(a, b int) bool { return logits[s.idx[a]] > logits[s.idx[b]] })
		if k := s.cfg.TopK; k > 0 && k < len(s.idx) {
			s.idx = s.idx[:k]
		}
	}
	mx := logits[best]
	var sum float64
	for _, j := range s.idx {
		p := math.Exp((logits[j] - mx) / s.cfg.Temperature)
		s.prob = append(s.prob, p)
		sum += p
	}
	keep := len(s.idx)
	if s.cfg.TopP < 1 {
		var mass float64
		for i, p := range s.prob {
			mass += p / sum
			if mass >= s.cfg.TopP {
				keep = i + 1
				break
			}
		}
	}
	var total float64
	for _, p := range s.prob[:keep] {
		total += p
	}
	u := s.rngs[row].Float64() * total
	for i, p := range s.prob[:keep] {
		if u < p {
			return s.idx[i]
		}
		u -= p
	}
	return s.idx[keep-1]
}

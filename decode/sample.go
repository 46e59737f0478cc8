package decode

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// SampleConfig sets how Sample picks tokens. Start from Greedy or Sampling.
type SampleConfig struct {
	MaxNewTokens int     // tokens to add to each row, > 0
	Temperature  float64 // 0 is greedy (argmax); > 0 samples from softmax(logits/Temperature)
	TopK         int     // sample among the k most likely tokens; 0 keeps all
	TopP         float64 // nucleus: sample among the fewest most likely tokens whose mass reaches TopP, in (0, 1]; 1 keeps all
	Seed         uint64  // seeds sampling, row r from PCG(Seed, r): equal seeds give equal tokens
	EOS          []int   // end a row after any of these tokens (it is kept)
	StopStrings  []string
	Decode       func(tokens []int) string // turns a row's new tokens into text, for StopStrings
	OnToken      func(row, token int)      // called with each new token as it is chosen
	// Constraints ban tokens as Hugging Face's logits processors do, on
	// the raw logits before temperature, top-k and top-p.
	Constraints
}

// Greedy decodes n tokens by argmax.
func Greedy(n int) SampleConfig { return SampleConfig{MaxNewTokens: n, TopP: 1} }

// Sampling samples n tokens at the given temperature with a seed.
func Sampling(n int, temperature float64, seed uint64) SampleConfig {
	return SampleConfig{MaxNewTokens: n, Temperature: temperature, TopP: 1, Seed: seed}
}

// Validate reports settings that cannot be used.
func (c SampleConfig) Validate() error {
	switch {
	case c.MaxNewTokens <= 0:
		return fmt.Errorf("decode: max_new_tokens %d must be positive", c.MaxNewTokens)
	case !(c.Temperature >= 0) || math.IsInf(c.Temperature, 0):
		return fmt.Errorf("decode: temperature %g must be finite and not negative (0 is greedy)", c.Temperature)
	case !(c.TopP > 0 && c.TopP <= 1):
		return fmt.Errorf("decode: top_p %g is outside (0, 1]; 1 turns nucleus sampling off", c.TopP)
	case c.TopK < 0:
		return fmt.Errorf("decode: top_k %d is negative; 0 turns it off", c.TopK)
	}
	if err := c.Constraints.Validate(); err != nil {
		return err
	}
	return checkStops(c.StopStrings, c.Decode)
}

// Sample continues each prompt (R rows of token ids, of any lengths ≥ 1)
// by up to cfg.MaxNewTokens tokens and returns each row's new tokens (R
// rows). A row ends after an EOS token (kept) or once the text of its new
// tokens holds a stop string; decoding ends when every row has ended or at
// MaxNewTokens. Ended rows still grow, repeating their last token, so that
// st sees rows that grow in step; those tokens are not returned.
//
// st is called once per new token with the R rows; OnToken, if set, sees
// every returned token as soon as it is chosen, row by row. Rows grow as
// tokens come: nothing is reserved for MaxNewTokens up front, so a large
// limit costs only the tokens decoded.
//
// Safe for concurrent use by multiple goroutines, each call with a
// Stepper of its own: a call keeps its state (its random generator too)
// to itself, and calls st, OnToken and Decode on the calling goroutine.
func Sample(st Stepper, prompts [][]int, cfg SampleConfig) ([][]int, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkPrompts(prompts); err != nil {
		return nil, err
	}
	rows := len(prompts)
	seqs := make([][]int, rows)
	for r, p := range prompts {
		// Room for some new tokens; append grows the rest.
		seqs[r] = append(make([]int, 0, len(p)+min(cfg.MaxNewTokens, initialRoom)), p...)
	}
	smp := newSampler(cfg, rows)
	stop := stopper{eos: cfg.EOS, strings: cfg.StopStrings, decode: cfg.Decode}
	out := make([][]int, rows)
	done := make([]bool, rows)
	left, v := rows, 0
	constrained := cfg.Constraints.active()
	var scratch []float64
	for t := 0; t < cfg.MaxNewTokens && left > 0; t++ {
		logits, err := step(st, seqs, t, &v)
		if err != nil {
			return nil, err
		}
		if constrained && t == 0 {
			if err := cfg.Constraints.checkVocab(v); err != nil {
				return nil, err
			}
		}
		for r := range seqs {
			if done[r] {
				seqs[r] = append(seqs[r], seqs[r][len(seqs[r])-1])
				continue
			}
			row := logits[r]
			if constrained {
				scratch = cfg.Constraints.process(seqs[r], row, scratch, t == cfg.MaxNewTokens-1)
				if row = scratch; math.IsInf(row[argmax(row)], -1) {
					return nil, fmt.Errorf("decode: step %d, row %d: the constraints ban every token", t, r)
				}
			}
			tok := smp.next(r, row)
			seqs[r] = append(seqs[r], tok)
			out[r] = append(out[r], tok)
			if cfg.OnToken != nil {
				cfg.OnToken(r, tok)
			}
			if stop.isEOS(tok) || stop.hasStopString(out[r]) {
				done[r] = true
				left--
			}
		}
	}
	return out, nil
}

// initialRoom is how many new tokens Sample reserves room for at once.
const initialRoom = 256

// sampler picks the next token of each row from its logits.
type sampler struct {
	temperature, topP float64
	topK              int
	rngs              []*rand.Rand
	idx               []int     // scratch: candidate ids, most likely first
	prob              []float64 // scratch: their weights exp((logit − max)/T), in idx's order
	all               []float64 // scratch, top-p: every token's weight, by id
	bins              [nucleusBins]float64
}

func newSampler(cfg SampleConfig, rows int) *sampler {
	s := &sampler{temperature: cfg.Temperature, topP: cfg.TopP, topK: cfg.TopK}
	for r := 0; r < rows; r++ {
		s.rngs = append(s.rngs, rand.New(rand.NewPCG(cfg.Seed, uint64(r))))
	}
	return s
}

// next picks a token from one row's logits (V). In sampling mode every
// call draws exactly one random number, so decoders that agree on the
// logits (cached and uncached) agree on the tokens.
//
// Tokens are drawn in order of probability, most likely first with ties
// going to the smaller id, once top-k or top-p filter them, and in id
// order otherwise: the order of a stable sort of the whole vocabulary, but
// only the tokens kept are ever ordered (see topK and nucleus).
func (s *sampler) next(row int, logits []float64) int {
	best := argmax(logits)
	if s.temperature == 0 {
		return best
	}
	mx, temp := logits[best], s.temperature
	s.idx, s.prob = s.idx[:0], s.prob[:0]
	var keep int
	switch v := len(logits); {
	case s.topK > 0 && s.topK < v:
		s.idx = topK(logits, s.topK, s.idx)
		var sum float64
		for _, j := range s.idx {
			p := math.Exp((logits[j] - mx) / temp)
			s.prob = append(s.prob, p)
			sum += p
		}
		keep = len(s.idx)
		if s.topP < 1 {
			var mass float64
			for i, p := range s.prob {
				mass += p / sum
				if mass >= s.topP {
					keep = i + 1
					break
				}
			}
		}
	case s.topP < 1:
		keep = s.nucleus(logits, mx)
	default: // plain temperature: id order, nothing to sort
		var total float64
		for _, l := range logits {
			p := math.Exp((l - mx) / temp)
			s.prob = append(s.prob, p)
			total += p
		}
		u := s.rngs[row].Float64() * total
		for j, p := range s.prob {
			if u < p {
				return j
			}
			u -= p
		}
		return v - 1
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

// nucleus fills idx and prob with the fewest most likely tokens whose
// probability mass reaches top_p, most likely first, and returns how many
// (Holtzman et al. 2020, https://arxiv.org/abs/1904.09751).
//
// Rather than sort the vocabulary, it files every token into one of
// nucleusBins bins by its probability relative to the likeliest token,
// e^−x for x in steps of 1/binsPerNat, finds the bin where the mass
// reaches top_p, and sorts only the tokens of that bin and the bins above
// it: two passes over the vocabulary and a sort of little more than the
// nucleus. If rounding leaves the sorted tokens short of the mass, the
// rest follow, sorted. The normaliser is summed in id order.
func (s *sampler) nucleus(logits []float64, mx float64) int {
	clear(s.bins[:])
	s.all = s.all[:0]
	var sum float64
	for _, l := range logits {
		e := (l - mx) / s.temperature // log(p / p_max) ≤ 0
		p := math.Exp(e)
		s.all = append(s.all, p)
		b := nucleusBins - 1 // the tail, and NaN
		if x := -e * binsPerNat; x < nucleusBins-1 {
			b = int(x)
		}
		s.bins[b] += p
		sum += p
	}
	last, cum := 0, s.bins[0]
	for ; last < nucleusBins-1 && cum < s.topP*sum; last++ {
		cum += s.bins[last+1]
	}
	// Every token of those bins has p ≥ θ (bar rounding, which the second
	// round mends); the tokens with p ≥ θ rank above all others.
	θ := math.Exp(-float64(last+1) / binsPerNat)
	var mass float64
	for _, upper := range []bool{true, false} {
		done := len(s.idx)
		for j, p := range s.all {
			if (p >= θ) == upper {
				s.idx = append(s.idx, j)
			}
		}
		slices.SortFunc(s.idx[done:], func(a, b int) int {
			if better(logits, a, b) {
				return -1
			}
			return 1
		})
		for _, j := range s.idx[done:] {
			p := s.all[j]
			s.prob = append(s.prob, p)
			if mass += p / sum; mass >= s.topP {
				return len(s.prob)
			}
		}
	}
	return len(s.prob)
}

// The bins of nucleus: 8 per nat of probability, down to e^−64 of the
// likeliest token's.
const (
	binsPerNat  = 8
	nucleusBins = 64 * binsPerNat
)

// better orders token ids by logit, largest first, ties going to the
// smaller id: a total order, so every sort by it agrees.
func better(logits []float64, a, b int) bool {
	return logits[a] > logits[b] || (logits[a] == logits[b] && a < b)
}

// worse is better reversed.
func worse(logits []float64, a, b int) bool { return better(logits, b, a) }

// topK writes to dst the ids of the k largest logits, most likely first
// with ties going to the smaller id, as a stable sort of all V ids would
// order them, and returns it. A min-heap of the k best so far costs
// O(V log k), and usually one comparison per token, instead of the
// O(V log V) of a sort. 1 ≤ k ≤ V.
func topK(logits []float64, k int, dst []int) []int {
	h := dst[:0]
	for j := 0; j < k; j++ {
		h = append(h, j)
	}
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(h, i, logits)
	}
	for j := k; j < len(logits); j++ {
		// j comes after every kept id, so on a tie with the worst kept it is worse.
		if logits[j] > logits[h[0]] {
			h[0] = j
			siftDown(h, 0, logits)
		}
	}
	// Heap sort: pop the worst to the end until the best is first.
	for n := len(h) - 1; n > 0; n-- {
		h[0], h[n] = h[n], h[0]
		siftDown(h[:n], 0, logits)
	}
	return h
}

// siftDown restores below i the heap property of topK's heap, whose root
// is the worst id kept.
func siftDown(h []int, i int, logits []float64) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && worse(logits, h[c+1], h[c]) {
			c++
		}
		if !worse(logits, h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// argmax is the first index of the largest value.
func argmax(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

package llama

import (
	"fmt"
	"math"
)

// MeanNLL is the mean negative log-likelihood, in nats, of the tokens of
// a stream given the tokens before them, and how many tokens it averages:
// ids is cut into consecutive windows of at most window tokens, each run
// from its start as one sequence, and every token but a window's first is
// predicted (exp(MeanNLL) is the perplexity). It measures what a weight
// format (models.WithWeightFormat) costs: the same stream through the
// float32 and a reduced model. Windows longer than CheckLength allows,
// ids outside the vocabulary and fewer than two tokens are refused.
// Safe for concurrent use, as Generate is.
func (m *ForCausalLM) MeanNLL(ids []int, window int) (nll float64, n int, err error) {
	if window < 2 || len(ids) < 2 {
		return 0, 0, fmt.Errorf("llama: MeanNLL: a window of %d over %d tokens predicts nothing; give at least 2 of each", window, len(ids))
	}
	if err := m.Config.CheckLength(window); err != nil {
		return 0, 0, fmt.Errorf("llama: MeanNLL: window: %w", err)
	}
	for i, id := range ids {
		if id < 0 || id >= m.Config.VocabSize {
			return 0, 0, fmt.Errorf("llama: MeanNLL: token %d is id %d, outside the vocabulary [0, %d)", i, id, m.Config.VocabSize)
		}
	}
	var sum float64
	v := m.Config.VocabSize
	for lo := 0; lo+1 < len(ids); lo += window {
		w := ids[lo:min(lo+window, len(ids))]
		if len(w) < 2 {
			break
		}
		g := m.Store.NewGraph()
		in, err := g.IntConstant("input_ids", w, 1, len(w))
		if err != nil {
			return 0, 0, fmt.Errorf("llama: MeanNLL: %w", err)
		}
		logits, err := m.Forward(g, Inputs{IDs: in})
		if err != nil {
			return 0, 0, err
		}
		vals, err := g.Evaluate(logits)
		if err != nil {
			return 0, 0, fmt.Errorf("llama: MeanNLL: %w", err)
		}
		for t := 0; t+1 < len(w); t++ {
			row := vals[0][t*v : (t+1)*v]
			mx := math.Inf(-1)
			for _, x := range row {
				mx = math.Max(mx, x)
			}
			var z float64
			for _, x := range row {
				z += math.Exp(x - mx)
			}
			sum += mx + math.Log(z) - row[w[t+1]]
			n++
		}
	}
	return sum / float64(n), n, nil
}

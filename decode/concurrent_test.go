package decode

import (
	"math/rand/v2"
	"testing"

	"github.com/d73a19ff/zoo/internal/racetest"
)

// TestConcurrentDecode runs Sample (greedy, and sampling with top-k and
// top-p) and BeamSearch from 8 goroutines at once, each call on a Stepper
// of its own over one shared table of logits, and checks that every
// answer equals the same call made alone: the package keeps no state
// between calls. Run it with -race (the CI does).
func TestConcurrentDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	table := make([][]float64, 12)
	for i := range table {
		table[i] = make([]float64, 12)
		for j := range table[i] {
			table[i][j] = 3 * rng.NormFloat64()
		}
	}
	prompts := [][]int{{1, 2}, {7}, {3, 3, 3}}
	step := func() Stepper { return &markov{table: table} }
	racetest.Check(t, 3,
		racetest.Call{Name: "Sample greedy", Run: func() (any, error) { return Sample(step(), prompts, Greedy(10)) }},
		racetest.Call{Name: "Sample", Run: func() (any, error) {
			return Sample(step(), prompts, SampleConfig{MaxNewTokens: 10, Temperature: 0.8, TopK: 6, TopP: 0.9, Seed: 3, EOS: []int{0}})
		}},
		racetest.Call{Name: "BeamSearch", Run: func() (any, error) {
			return BeamSearch(step(), prompts, BeamConfig{Beam: 4, NBest: 3, MaxNewTokens: 8, LengthPenalty: 0.6, EOS: []int{0}})
		}},
	)
}

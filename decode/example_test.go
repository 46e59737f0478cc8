package decode_test

import (
	"fmt"
	"math"

	"github.com/d73a19ff/zoo/decode"
)

// A bigram "model": the logits of the next token depend only on the last.
// Token 0 is bos, 1 is eos; after bos, "a" (2) is likelier than "b" (3),
// but "b" is nearly always followed by eos, and "a" is not.
var bigram = [][]float64{
	{math.Log(0.05), math.Log(0.05), math.Log(0.5), math.Log(0.4)},
	{math.Log(0.25), math.Log(0.25), math.Log(0.25), math.Log(0.25)},
	{math.Log(0.2), math.Log(0.3), math.Log(0.3), math.Log(0.2)},
	{math.Log(0.05), math.Log(0.9), math.Log(0.025), math.Log(0.025)},
}

// step maps every row to the logits after its last token: R rows of V = 4.
func step(seqs [][]int) ([][]float64, error) {
	out := make([][]float64, len(seqs))
	for r, s := range seqs {
		out[r] = bigram[s[len(s)-1]]
	}
	return out, nil
}

// Decode greedily, sample with a seed, and search with beams, all through
// one step function.
func Example() {
	st := decode.StepFunc(step) // no cache, so nothing to reorder
	prompts := [][]int{{0}, {3}}

	greedy := decode.Greedy(4)
	greedy.EOS = []int{1}
	out, err := decode.Sample(st, prompts, greedy)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("greedy:", out)

	sampled := decode.Sampling(4, 1, 42)
	sampled.TopK, sampled.EOS = 2, []int{1}
	if out, err = decode.Sample(st, prompts, sampled); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("sampled, top-2, seed 42:", out)

	hyps, err := decode.BeamSearch(st, prompts[:1], decode.BeamConfig{Beam: 2, NBest: 2, MaxNewTokens: 4, EOS: []int{1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range hyps[0] {
		fmt.Printf("beam: %v then eos %v, P = %.2f\n", h.Tokens, h.EOS, math.Exp(h.LogProb))
	}
	// Output:
	// greedy: [[2 1] [1]]
	// sampled, top-2, seed 42: [[2 2 1] [1]]
	// beam: [3] then eos true, P = 0.36
	// beam: [2] then eos true, P = 0.15
}

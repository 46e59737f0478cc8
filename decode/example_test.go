package decode_test

import (
	"encoding/json"
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

// Read the generation fields of a config.json (or generation_config.json):
// bad_words_ids less a lone eos, the other constraints, num_beams, and a
// note on a field generate does not read. A field that would change the
// output and that the zoo does not implement is refused, unless it has its
// "off" value.
func ExampleParseGeneration() {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(`{
		"model_type": "marian",
		"num_beams": 4,
		"bad_words_ids": [[3], [2, 4], [1]],
		"no_repeat_ngram_size": 2,
		"forced_eos_token_id": 1,
		"repetition_penalty": 1.0,
		"task_specific_params": {"translation": {"num_beams": 6}}
	}`), &raw); err != nil {
		fmt.Println(err)
		return
	}
	g, err := decode.ParseGeneration(raw, []int{1}) // eos is 1
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("num_beams:", *g.NumBeams)
	fmt.Println("bad words:", g.BadWords) // [1] alone is eos: never banned
	fmt.Println("no repeat n-gram:", g.NoRepeatNGramSize)
	fmt.Println("forced eos:", g.ForcedEOS, g.ForcedEOSSet)
	fmt.Println("max_length set:", g.MaxLength != nil)
	for _, n := range g.Notes {
		fmt.Println("note:", n)
	}

	raw["encoder_repetition_penalty"] = json.RawMessage("1.2")
	_, err = decode.ParseGeneration(raw, []int{1})
	fmt.Println("error:", err)
	// Output:
	// num_beams: 4
	// bad words: [[3] [2 4]]
	// no repeat n-gram: 2
	// forced eos: [1] true
	// max_length set: false
	// note: task_specific_params {"translation":{"num_beams":6}} is not applied: transformers' pipelines read it for their task, generate does not
	// error: encoder_repetition_penalty 1.2 is not supported: the zoo's decoders do not implement it; remove it (or set it to 1)
}

// The two length penalties that beam search divides a hypothesis's log P
// by: GNMT's ((5 + |y|) / 6)^α, the zoo's default, and Hugging Face's
// |y|^α (length_penalty), here with α = 1 and α = 0.6.
func ExampleParseLengthPenaltyStyle() {
	for _, name := range []string{"gnmt", "hf"} {
		s, err := decode.ParseLengthPenaltyStyle(name)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%-4s", s)
		for _, n := range []int{1, 2, 5, 10} {
			fmt.Printf("  lp(%d) = %.3f, %.3f", n, s.Penalty(n, 1), s.Penalty(n, 0.6))
		}
		fmt.Println()
	}
	fmt.Println(decode.LengthPenalty(10, 0.6) == decode.GNMTPenalty.Penalty(10, 0.6))
	_, err := decode.ParseLengthPenaltyStyle("HF")
	fmt.Println(err)
	// Output:
	// gnmt  lp(1) = 1.000, 1.000  lp(2) = 1.167, 1.097  lp(5) = 1.667, 1.359  lp(10) = 2.500, 1.733
	// hf    lp(1) = 1.000, 1.000  lp(2) = 2.000, 1.516  lp(5) = 5.000, 2.627  lp(10) = 10.000, 3.981
	// true
	// decode: length penalty style "HF": want gnmt (((5+|y|)/6)^α) or hf (|y|^α, Hugging Face's)
}

// Hugging Face's generation constraints on the bigram model of Example:
// each changes what Sample and BeamSearch choose. Greedy decoding here has
// no EOS, so every row takes four tokens: a bad word [0 2] bans "a" after
// bos, no_repeat_ngram_size 2 bans the second "bos a", and the forced eos
// token is the last one. Beam search without "b" finds the best
// hypothesis that does not use it. An id that cannot be a token is an
// error before decoding starts.
func ExampleConstraints() {
	st := decode.StepFunc(step)
	prompt := [][]int{{0}}
	for _, c := range []struct {
		name string
		decode.Constraints
	}{
		{"none", decode.Constraints{}},
		{"bad word [0 2]", decode.Constraints{BadWords: [][]int{{0, 2}}}},
		{"no repeated bigram", decode.Constraints{NoRepeatNGramSize: 2}},
		{"forced eos", decode.Constraints{ForcedEOS: []int{1}}},
	} {
		cfg := decode.Greedy(4)
		cfg.Constraints = c.Constraints
		out, err := decode.Sample(st, prompt, cfg)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("greedy, %s: %v\n", c.name, out[0])
	}

	beam := decode.BeamConfig{Beam: 2, MaxNewTokens: 4, EOS: []int{1}}
	for _, c := range []decode.Constraints{{}, {BadWords: [][]int{{3}}}} {
		beam.Constraints = c
		hyps, err := decode.BeamSearch(st, prompt, beam)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("beam, bad words %v: %v, P = %.3f\n", c.BadWords, hyps[0][0].Tokens, math.Exp(hyps[0][0].LogProb))
	}

	cfg := decode.Greedy(4)
	cfg.Suppress = []int{-1}
	_, err := decode.Sample(st, prompt, cfg)
	fmt.Println(err)
	// Output:
	// greedy, none: [2 1 0 2]
	// greedy, bad word [0 2]: [3 1 0 3]
	// greedy, no repeated bigram: [2 1 0 3]
	// greedy, forced eos: [2 1 0 1]
	// beam, bad words []: [3], P = 0.360
	// beam, bad words [[3]]: [2], P = 0.150
	// decode: suppressed token -1 is negative
}

// A repetition penalty (Hugging Face's repetition_penalty) makes the
// tokens a row already holds less likely: after bos and "a", plain greedy
// decoding comes back to bos (0) and "a" (2), which the row holds; with a
// penalty of 2 it takes "b" (3), which it does not, after eos's uniform
// row.
func ExampleConstraints_repetitionPenalty() {
	st := decode.StepFunc(step)
	plain, _ := decode.Sample(st, [][]int{{0, 2}}, decode.Greedy(3))
	cfg := decode.Greedy(3)
	cfg.RepetitionPenalty = 2 // scores of seen tokens: negative ones doubled, positive ones halved
	penalized, err := decode.Sample(st, [][]int{{0, 2}}, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("plain:", plain[0], "penalized:", penalized[0])
	// Output:
	// plain: [1 0 2] penalized: [1 3 1]
}

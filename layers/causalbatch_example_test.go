package layers_test

import (
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
)

// tinyLM is ExampleCausalLM's tiny LLaMA-shaped decoder.
func tinyLM() (*layers.CausalLM, error) {
	s, err := layers.NewStore(layers.WithSeed(1), layers.WithInitStd(0.5))
	if err != nil {
		return nil, err
	}
	wte, err := layers.NewEmbedding(s.Root().Sub("embed_tokens"), 32, 16)
	if err != nil {
		return nil, err
	}
	rope, err := layers.NewRotary(4, 10000)
	if err != nil {
		return nil, err
	}
	stack, err := layers.NewEncoder(s.Root().Sub("model"), layers.BlockConfig{
		Dim: 16, Heads: 4, KVHeads: 2, FFNDim: 32, Activation: "silu", Norm: layers.PreNorm, LayerNormEps: 1e-5,
		Causal: true, Positions: rope,
	}, 2)
	if err != nil {
		return nil, err
	}
	return &layers.CausalLM{
		Name: "tiny", Store: s, Stack: stack, Head: wte.Logits, Context: 64, Graphs: &layers.CausalGraphs{},
		Embed: func(g *layers.Graph, ids, _ *gorgonia.Node) (*gorgonia.Node, error) { return wte.Forward(g, ids) },
	}, nil
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

// Continuous batching: a second sequence joins the running batch after
// the first has made three tokens, and the first leaves when it is done;
// each gets the greedy tokens it gets decoded alone.
func ExampleCausalLM_NewBatch() {
	lm, err := tinyLM()
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := lm.NewBatch(4, 64) // 4 rows of 64 slots
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	prompts, n := [][]int{{1, 5, 9}, {2}}, []int{6, 8}
	rows, out := []int{-1, -1}, make([][]int, 2)
	for step := 0; len(out[0]) < n[0] || len(out[1]) < n[1]; step++ {
		for i, at := range []int{0, 3} { // join between steps
			if step == at {
				r, logits, err := b.Join(prompts[i], n[i])
				if err != nil {
					fmt.Println(err)
					return
				}
				rows[i], out[i] = r, []int{argmax(logits)}
			}
		}
		tokens := []int{-1, -1, -1, -1} // −1: the row does not step
		for i, r := range rows {
			if r >= 0 && len(out[i]) < n[i] {
				tokens[r] = out[i][len(out[i])-1]
			}
		}
		logits, err := b.Step(tokens)
		if err != nil {
			fmt.Println(err)
			return
		}
		for i, r := range rows {
			if r >= 0 && tokens[r] >= 0 {
				out[i] = append(out[i], argmax(logits[r]))
				if len(out[i]) == n[i] {
					b.Leave(r) // its row is free for another sequence
					rows[i] = -1
				}
			}
		}
	}
	for i, p := range prompts {
		st, _ := lm.NewStepper(layers.CausalOptions{MaxNewTokens: n[i]})
		alone, err := decode.Sample(st, [][]int{p}, decode.Greedy(n[i]))
		st.Close()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(len(out[i]), slices.Equal(out[i], alone[0]))
	}
	// Output:
	// 6 true
	// 8 true
}

// A NewStepperFunc makes a decoding's stepper: here the model's own,
// counting its steps; a nil one is the model's own.
func ExampleNewStepperFunc_Start() {
	lm, err := tinyLM()
	if err != nil {
		fmt.Println(err)
		return
	}
	steps := 0
	f := layers.NewStepperFunc(func(lm *layers.CausalLM, o layers.CausalOptions) (decode.Stepper, error) {
		st, err := lm.NewStepper(o)
		if err != nil {
			return nil, err
		}
		return counted{st, &steps}, nil
	})
	st, done, err := f.Start(lm, layers.CausalOptions{MaxNewTokens: 5})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	out, err := decode.Sample(st, [][]int{{3, 4}}, decode.Greedy(5))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(out[0]), "tokens,", steps, "steps")
	// Output: 5 tokens, 5 steps
}

// counted is a CausalStepper counting its steps.
type counted struct {
	*layers.CausalStepper
	n *int
}

func (c counted) Step(seqs [][]int) ([][]float64, error) {
	*c.n++
	return c.CausalStepper.Step(seqs)
}

package gpt_test

import (
	"fmt"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/gpt"
)

// Build a small GPT and continue two prompts, streaming the tokens.
func Example() {
	m, err := gpt.New(gpt.Micro(), layers.WithSeed(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("parameters:", m.NumParams())
	cfg := gpt.Sampling(8, 0.8, 42) // temperature 0.8, seed 42
	cfg.TopK = 20
	streamed := 0
	cfg.OnToken = func(row, token int) { streamed++ }
	out, err := m.Generate([][]int{{1, 2, 3}, {4}}, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("new tokens:", len(out[0]), len(out[1]), "streamed:", streamed)
	// Output:
	// parameters: 29568
	// new tokens: 8 8 streamed: 16
}

// Load a Hugging Face GPT-2 checkpoint directory and decode greedily.
func ExampleLoad() {
	m, err := gpt.Load("testdata/parity") // config.json + model.safetensors
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := m.Generate([][]int{{95}}, gpt.Greedy(5))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Config.NLayer, "layers,", len(out[0]), "tokens")
	// Output:
	// 2 layers, 5 tokens
}

package llama_test

import (
	"fmt"
	"path/filepath"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
)

// Weights in bf16 (or int8) for decoding: converted once at load, widened
// inside each product. The float32 model of this checkpoint gives the
// same tokens.
func ExampleLoadForCausalLM_weightFormat() {
	f, err := models.ParseWeightFormat("bf16")
	if err != nil {
		fmt.Println(err)
		return
	}
	m, _, err := llama.LoadForCausalLM(filepath.Join("testdata", "parity", "llama_gqa"), models.WithWeightFormat(f))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := m.Generate([][]int{{5, 9, 14, 3}, {7, 1}}, llama.GenerateConfig{SampleConfig: decode.Greedy(4)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.WeightFormat(), out)
	// Output:
	// bf16 [[24 12 12 12] [28 7 2 19]]
}

// The mean negative log-likelihood of a token stream, in windows: what a
// weight format costs in perplexity.
func ExampleForCausalLM_MeanNLL() {
	dir := filepath.Join("testdata", "parity", "llama_gqa")
	ids := []int{5, 9, 14, 3, 7, 1, 2, 8, 20, 11}
	for _, f := range []models.WeightFormat{models.WeightsF32, models.WeightsInt8} {
		m, _, err := llama.LoadForCausalLM(dir, models.WithWeightFormat(f))
		if err != nil {
			fmt.Println(err)
			return
		}
		nll, n, err := m.MeanNLL(ids, 5)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %d tokens, mean NLL %.2f\n", f, n, nll)
	}
	// Output:
	// f32: 8 tokens, mean NLL 3.58
	// int8: 8 tokens, mean NLL 3.59
}

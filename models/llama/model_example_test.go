package llama_test

import (
	"fmt"
	"os"
	"path/filepath"

	"gorgonia.org/tensor"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
	"github.com/d73a19ff/zoo/models/llama"
)

// LoadForCausalLM reads a transformers checkpoint (here a tiny random
// Llama of the parity tests) and Generate continues prompts of different
// lengths, left-padded into one batch, greedily through the KV cache.
func ExampleLoadForCausalLM() {
	m, report, err := llama.LoadForCausalLM(filepath.Join("testdata", "parity", "llama_gqa"), models.Strict())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Config.ModelType, m.NumParams(), "parameters,", len(report.Created), "created")
	out, err := m.Generate([][]int{{5, 9, 14, 3}, {7, 1}}, llama.GenerateConfig{SampleConfig: decode.Greedy(4)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out)
	// Output:
	// llama 4944 parameters, 0 created
	// [[24 12 12 12] [28 7 2 19]]
}

// NewForCausalLM builds a model from a config with transformers'
// initialisation; Save writes a checkpoint transformers reads
// (LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM), which
// models.Open knows as the llama family's.
func ExampleNewForCausalLM() {
	m, err := llama.NewForCausalLM(llama.TinyQwen2(), layers.WithSeed(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "qwen2")
	defer os.RemoveAll(dir)
	if err := m.Save(dir); err != nil {
		fmt.Println(err)
		return
	}
	ck, err := models.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ck.Family.Name, ck.ModelType, ck.Architectures, m.LMHead == nil)
	// Output:
	// llama qwen2 [Qwen2ForCausalLM] true
}

// ForCausalLM.Forward gives a left-padded batch's logits, its position
// ids from the attention mask (PositionIDs) as transformers' generate
// derives them.
func ExampleForCausalLM_Forward() {
	m, err := llama.NewForCausalLM(llama.Tiny(), layers.WithSeed(1), layers.WithDtype(tensor.Float64))
	if err != nil {
		fmt.Println(err)
		return
	}
	mask := []float64{1, 1, 1, 0, 1, 1} // row 1 is left-padded
	pos, _ := llama.PositionIDs(mask, 3)
	g := m.Store.NewGraph()
	ids, _ := g.IntConstant("input_ids", []int{4, 8, 15, 0, 16, 23}, 2, 3)
	mn, _ := g.Constant("attention_mask", mask, 2, 3)
	pn, _ := g.IntConstant("position_ids", pos, 2, 3)
	logits, err := m.Forward(g, llama.Inputs{IDs: ids, Mask: mn, Positions: pn})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pos, logits.Shape())
	// Output:
	// [0 1 2 1 0 1] (2, 3, 96)
}

// LoadForSequenceClassification puts a new classification head on a
// causal LM's checkpoint: the report names the LM head dropped and the
// score created. LastTokens finds the tokens the head reads.
func ExampleLoadForSequenceClassification() {
	c, report, err := llama.LoadForSequenceClassification(filepath.Join("testdata", "parity", "llama_gqa"),
		models.WithLabels("negative", "positive"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Labels, report.Dropped, report.Created, report.NewHead)
	last, _ := c.Config.LastTokens([]int{5, 6, 7, 0, 8, 9, 0, 0}, 4) // right-padded with pad_token_id 0
	fmt.Println(last)
	// Output:
	// [negative positive] [lm_head.weight] [score.weight] true
	// [2 1]
}

package llama_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models/llama"
)

// tinyCheckpoint saves a tiny random LLaMA (or, with labels, a sequence
// classifier) with datasets' Llama 2 test tokenizer into a new directory:
// what a checkpoint directory downloaded from the Hub holds.
func tinyCheckpoint(labels ...string) string {
	dir, _ := os.MkdirTemp("", "llama")
	c := llama.Tiny()
	one, two := 1, 2
	c.VocabSize, c.BOSTokenID, c.EOSTokenID = 2350, &one, llama.IDs(two)
	if labels == nil {
		m, _ := llama.NewForCausalLM(c, layers.WithSeed(5), layers.WithInitStd(0.3))
		_ = m.Save(dir)
	} else {
		m, _ := llama.NewForSequenceClassification(c, labels, layers.WithSeed(6), layers.WithInitStd(0.3))
		_ = m.Save(dir)
	}
	tok, _ := os.ReadFile(filepath.Join("..", "..", "datasets", "testdata", "llama_bpe.json"))
	_ = os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644)
	return dir
}

// Load a LLaMA checkpoint and continue a prompt greedily in one call.
func ExampleLoadTextGeneration() {
	dir := tinyCheckpoint()
	defer os.RemoveAll(dir)

	p, err := llama.LoadTextGeneration(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := p.Defaults() // the checkpoint's generation_config.json, if any
	cfg.MaxNewTokens, cfg.Temperature = 5, 0
	out, err := p.Generate(context.Background(), []string{"Hello"}, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d new tokens: %q\n", len(out[0].Tokens), out[0].Text)
	// Output:
	// 5 new tokens: "Helloiquand\nExperiment with a with a "
}

// Load a LLaMA sequence classifier and classify texts in one call.
func ExampleLoadTextClassification() {
	dir := tinyCheckpoint("neg", "pos")
	defer os.RemoveAll(dir)

	p, err := llama.LoadTextClassification(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	p.TopK = 0 // every label
	out, err := p.Predict(context.Background(), []string{"the cat sat on the mat"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(out[0]), "labels, best first:", out[0][0].Score >= out[0][1].Score)
	// Output:
	// 2 labels, best first: true
}

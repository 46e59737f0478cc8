package gpt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/decode"
	"github.com/d73a19ff/zoo/layers"
	"github.com/d73a19ff/zoo/models"
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
	m, _, err := gpt.Load("testdata/parity") // config.json + model.safetensors
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

// A GPT-2 config.json's generation settings, as transformers'
// GenerationConfig.from_model_config reads them: Generate and BeamSearch
// apply its rules, zoo generate takes its settings as defaults, and
// task_specific_params, which only transformers' pipelines read, is a
// note. A setting the zoo does not implement is an error naming it.
func ExampleConfig_Generation() {
	file := `{
		"model_type": "gpt2", "vocab_size": 96, "n_positions": 24, "n_embd": 32, "n_layer": 2, "n_head": 4,
		"bos_token_id": 95, "eos_token_id": 95,
		"do_sample": true, "top_k": 20, "max_length": 16,
		"bad_words_ids": [[7], [95]], "no_repeat_ngram_size": 3,
		"task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}}
	}`
	var c gpt.Config
	if err := json.Unmarshal([]byte(file), &c); err != nil {
		fmt.Println(err)
		return
	}
	g, err := c.Generation()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("from:", g.From)
	fmt.Println("do_sample:", *g.DoSample, "top_k:", *g.TopK, "max_length:", *g.MaxLength)
	fmt.Println("bad words:", g.BadWords, "no repeat:", g.NoRepeatNGramSize) // [95] alone is eos
	for _, n := range g.Notes {
		fmt.Println("note:", n)
	}

	c.Extra["min_length"] = json.RawMessage("10")
	_, err = c.Generation()
	fmt.Println(err)
	// Output:
	// from: config.json
	// do_sample: true top_k: 20 max_length: 16
	// bad words: [[7]] no repeat: 3
	// note: task_specific_params {"text-generation":{"do_sample":true,"max_length":50}} is not applied: transformers' pipelines read it for their task, generate does not
	// gpt config: min_length 10 is not supported: the zoo's decoders do not implement it; remove it (or set it to 0)
}

// A checkpoint's generation_config.json, when it has one, is what
// ReadGeneration reads, as transformers' generate does; else the
// config.json's fields (Config.Generation). A refused field names the
// file it is in.
func ExampleReadGeneration() {
	dir, err := os.MkdirTemp("", "gpt-generation")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	c := gpt.Micro()
	c.Extra = map[string]json.RawMessage{"num_beams": json.RawMessage("4")}

	g, err := gpt.ReadGeneration(dir, c)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g.From, "num_beams", *g.NumBeams)

	path := filepath.Join(dir, decode.GenerationFile)
	if err := os.WriteFile(path, []byte(`{"num_beams": 2, "length_penalty": 0.6}`), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	if g, err = gpt.ReadGeneration(dir, c); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g.From, "num_beams", *g.NumBeams, "length_penalty", *g.LengthPenalty)

	if err := os.WriteFile(path, []byte(`{"num_beams": 2, "typical_p": 0.9}`), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	_, err = gpt.ReadGeneration(dir, c)
	fmt.Println(strings.ReplaceAll(fmt.Sprint(err), dir, "DIR"))
	// Output:
	// config.json num_beams 4
	// generation_config.json num_beams 2 length_penalty 0.6
	// gpt: DIR/generation_config.json: typical_p 0.9 is not supported: the zoo's decoders do not implement it; remove it (or set it to 1)
}

// The generation_config.json that Save writes for a language model: the
// one it was loaded with, byte for byte, else the one transformers
// derives from its config.json (GenerationConfig.from_model_config).
func ExampleConfig_GenerationConfigJSON() {
	c := gpt.GPT2Small()
	c.Extra = map[string]json.RawMessage{"num_beams": json.RawMessage("4"), "use_cache": json.RawMessage("true")}
	b, err := c.GenerationConfigJSON()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(b))
	c.GenerationConfig = json.RawMessage(`{"_from_model_config": true, "bos_token_id": 50256, "eos_token_id": 50256}`)
	if b, err = c.GenerationConfigJSON(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(b))
	// Output:
	// {
	//   "bos_token_id": 50256,
	//   "eos_token_id": 50256,
	//   "num_beams": 4
	// }
	// {"_from_model_config": true, "bos_token_id": 50256, "eos_token_id": 50256}
}

// Read every layer's hidden states, transformers' output_hidden_states:
// n_layer+1 of them, the last after ln_f (the LM head's input).
func ExampleModel_HiddenStates() {
	m, _, err := gpt.Load("testdata/parity")
	if err != nil {
		fmt.Println(err)
		return
	}
	hs, err := m.HiddenStates([]int{95, 12, 7, 64})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(hs), "states of", len(hs[0]), "positions ×", len(hs[0][0]), "features")
	// Output:
	// 3 states of 4 positions × 32 features
}

// Read every layer's attention probabilities, transformers'
// output_attentions: (n_layer, n_head, T, T), causal.
func ExampleModel_Attentions() {
	m, _, err := gpt.Load("testdata/parity")
	if err != nil {
		fmt.Println(err)
		return
	}
	att, err := m.Attentions([]int{95, 12, 7, 64})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(att), "layers ×", len(att[0]), "heads ×", len(att[0][0]), "queries ×", len(att[0][0][0]), "keys")
	fmt.Printf("first query, last layer, head 0: %.2f\n", att[1][0][0])
	// Output:
	// 2 layers × 4 heads × 4 queries × 4 keys
	// first query, last layer, head 0: [1.00 0.00 0.00 0.00]
}

// Put a new classification head on a language model's checkpoint: the
// report says the head is new (score.weight created). A classifier's own
// checkpoint loads with the labels of its config.json's id2label.
func ExampleLoadForSequenceClassification() {
	c, report, err := gpt.LoadForSequenceClassification("testdata/parity", models.WithLabels("negative", "positive"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Labels, "new head:", report.NewHead, "created:", report.Created)
	dir, err := os.MkdirTemp("", "gpt-classifier")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := c.Save(dir); err != nil {
		fmt.Println(err)
		return
	}
	back, report, err := gpt.LoadForSequenceClassification(dir, models.Strict())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(back.Labels, "exact:", report.Exact())
	// Output:
	// [negative positive] new head: true created: [score.weight]
	// [negative positive] exact: true
}

// Continue prompts in one call, with the checkpoint's generation settings
// (its generation_config.json says greedy, 12 new tokens), streaming the
// new text as it comes.
func ExampleLoadTextGeneration() {
	g, err := gpt.LoadTextGeneration("testdata/pipeline") // a tiny untrained GPT-2
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := g.Defaults()
	cfg.OnText = func(_ int, piece string) { fmt.Print(piece) } // prints the new text as it comes
	out, err := g.Generate(context.Background(), []string{"the cat"}, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("\n%q\n", out[0].Text)
	// Output:
	// ssssmphg  ah
	// "the catssssmphg  ah"
}

// Classify texts in one call: each gets its best label (top_k 1) with its
// probability.
func ExampleLoadTextClassification() {
	clf, err := gpt.LoadTextClassification("testdata/classifier") // a tiny untrained 3-label classifier
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := clf.Predict(context.Background(), []string{"the sun is hot today", "a dog ran"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, labels := range out {
		fmt.Printf("%s %.3f\n", labels[0].Label, labels[0].Score)
	}
	// Output:
	// negative 0.456
	// positive 0.643
}

// GenerateContext stops decoding once its context is done: here a
// deadline already passed stops it before the first token.
func ExampleModel_GenerateContext() {
	m, err := gpt.New(gpt.Micro(), layers.WithSeed(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	_, err = m.GenerateContext(ctx, [][]int{{1, 2, 3}}, gpt.Greedy(5))
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// true
}

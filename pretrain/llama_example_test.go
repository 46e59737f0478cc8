package pretrain_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/d73a19ff/zoo/models/llama"
	"github.com/d73a19ff/zoo/pretrain"
)

// LLaMA-style pretraining: a byte-fallback BPE trained on the corpus, a
// model from a preset with sizes changed, and a checkpoint that is a
// Hugging Face LlamaForCausalLM folder, which the text-generation
// pipeline loads. With InitFrom set, the same call fine-tunes a
// checkpoint as a language model. pretrain.EvalLlama scores a checkpoint
// on a text as the run's validation does.
func ExampleRunLlama() {
	dir, err := os.MkdirTemp("", "llama")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := pretrain.DefaultLlama()
	cfg.Corpus, cfg.OutputDir = filepath.Join(dir, "corpus.txt"), filepath.Join(dir, "run")
	if err := os.WriteFile(cfg.Corpus, []byte(strings.Repeat("the red fox runs to the red den. ", 60)), 0o644); err != nil {
		log.Fatal(err)
	}
	if cfg.Model, err = pretrain.LlamaPreset("tiny"); err != nil {
		log.Fatal(err)
	}
	cfg.Model.NumHiddenLayers = 1
	cfg.BPEVocab, cfg.BlockSize, cfg.Samples = 300, 16, 0
	cfg.BatchSize, cfg.MaxSteps, cfg.WarmupSteps, cfg.EvalSteps, cfg.SaveSteps = 4, 2, 0, 2, 0
	res, err := pretrain.RunLlama(context.Background(), cfg, io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	g, err := llama.LoadTextGeneration(res.Final)
	if err != nil {
		log.Fatal(err)
	}
	loss, _, err := pretrain.EvalLlama(context.Background(), res.Final, cfg.Corpus, 4, 16)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Steps, "steps;", g.Model.Config.ModelType, "bos", *g.Model.Config.BOSTokenID, "eos", g.EOS, "; bits per character > 0:", res.BitsPerChar > 0, "; eval loss > 0:", loss > 0)
	// Output: 2 steps; llama bos 1 eos [2] ; bits per character > 0: true ; eval loss > 0: true
}

// A config file's preset is the model its model section is read over.
func ExampleDecodeLlamaConfig() {
	cfg, err := pretrain.DecodeLlamaConfig([]byte(`{"preset": "smollm-135m", "block_size": 256, "model": {"num_hidden_layers": 6}}`), pretrain.DefaultLlama())
	if err != nil {
		log.Fatal(err)
	}
	m := cfg.Model
	fmt.Println(m.NumHiddenLayers, "layers of", m.HiddenSize, "with", m.NumAttentionHeads, "query and", m.KVHeads(), "key-value heads; block", cfg.Block())
	// Output: 6 layers of 576 with 9 query and 3 key-value heads; block 256
}

package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/d73a19ff/zoo/datasets"
	"github.com/d73a19ff/zoo/models/gpt"
	"github.com/d73a19ff/zoo/pretrain"
)

// runGenerate is `zoo generate --checkpoint DIR --prompt TEXT [flags]`,
// streaming the continuation as it is produced.
func runGenerate(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("zoo generate", flag.ContinueOnError)
	ckpt := fs.String("checkpoint", "", "checkpoint directory (config.json, model.safetensors, tokenizer.json)")
	prompt := fs.String("prompt", "\n", "text to continue")
	n := fs.Int("max-new-tokens", 200, "tokens to generate")
	temp := fs.Float64("temperature", 0.8, "sampling temperature; 0 is greedy")
	topK := fs.Int("top-k", 0, "sample among the k most likely tokens; 0 keeps all")
	topP := fs.Float64("top-p", 1, "nucleus sampling mass in (0, 1]")
	seed := fs.Uint64("seed", 1, "sampling seed")
	noCache := fs.Bool("no-cache", false, "recompute the context every step instead of using the KV cache")
	if help, err := parse(fs, args, stdout, "usage: zoo generate --checkpoint DIR [--prompt TEXT] [flags]"); help || err != nil {
		return err
	}
	if *ckpt == "" {
		return fmt.Errorf("%w: --checkpoint is required", errUsage)
	}
	m, err := gpt.Load(*ckpt)
	if err != nil {
		return err
	}
	tok, err := datasets.LoadTokenizer(filepath.Join(*ckpt, pretrain.TokenizerFile))
	if err != nil {
		return fmt.Errorf("tokenizer: %w", err)
	}
	ids, err := tok.Encode(*prompt)
	if err != nil {
		return fmt.Errorf("prompt: %w", err)
	}
	cfg := gpt.GenerateConfig{MaxNewTokens: *n, Temperature: *temp, TopK: *topK, TopP: *topP, Seed: *seed, NoCache: *noCache}
	var out []int
	printed := ""
	cfg.OnToken = func(_, token int) {
		out = append(out, token)
		if text, err := tok.Decode(out); err == nil && len(text) > len(printed) {
			fmt.Fprint(stdout, text[len(printed):])
			printed = text
		}
	}
	fmt.Fprint(stdout, *prompt)
	if _, err := m.Generate([][]int{ids}, cfg); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	return nil
}

package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/d73a19ff/zoo/pretrain"
)

// llamaModelFlags are the model flags of LLaMA training: a preset and the
// sizes that override it, applied to the config once the flags are parsed
// (apply).
type llamaModelFlags struct {
	preset                                         string
	hidden, inter, layers, heads, kvHeads, headDim int
}

// llamaFlags binds the flags of LLaMA causal-LM training to cfg, the model
// flags to the returned llamaModelFlags (apply them once parsed).
func llamaFlags(f *cmdFlags, cfg *pretrain.LlamaConfig, initWhat string) *llamaModelFlags {
	f.trainArgs(&cfg.Args, &cfg.InitFrom, argsHelp{batchWhat: "sequences", warmupWhat: "before the cosine decay", initWhat: initWhat})
	f.StringVar(&cfg.Corpus, "corpus", cfg.Corpus, "corpus file, directory or glob (default: Newton's Opticks from the Go toolchain)")
	f.StringVar(&cfg.Tokenizer, "tokenizer", cfg.Tokenizer, "bpe (a byte-fallback BPE trained on the corpus, as Llama 2's), char, or the path of a tokenizer.json")
	f.IntVar(&cfg.BPEVocab, "vocab-size", cfg.BPEVocab, "tokens of the BPE trained on the corpus (bpe_vocab_size)")
	f.IntVar(&cfg.BlockSize, "block-size", cfg.BlockSize, "training window in tokens (0: max_position_embeddings)")
	m := &llamaModelFlags{}
	mc := cfg.Model
	f.StringVar(&m.preset, "preset", cfg.Preset, "model to start from: opticks (the GPT main job's size), tiny, smollm-135m, tinyllama-1.1b or qwen2.5-0.5b; the size flags override it (default: opticks)")
	f.IntVar(&m.hidden, "hidden-size", mc.HiddenSize, "model width (hidden_size)")
	f.IntVar(&m.inter, "intermediate-size", mc.IntermediateSize, "SwiGLU width (intermediate_size)")
	f.IntVar(&m.layers, "layers", mc.NumHiddenLayers, "decoder layers (num_hidden_layers)")
	f.IntVar(&m.heads, "heads", mc.NumAttentionHeads, "query heads (num_attention_heads)")
	f.IntVar(&m.kvHeads, "kv-heads", mc.NumKeyValueHeads, "key/value heads, shared by groups of query heads (num_key_value_heads; 0: as many as the query heads)")
	f.IntVar(&m.headDim, "head-dim", mc.HeadDim, "width of each head (head_dim; 0: hidden_size / heads)")
	return m
}

// apply sets the preset, if given, then each size flag that was set; a
// size flag not set keeps the config's (the file's or the preset's) value.
func (m *llamaModelFlags) apply(f *cmdFlags, cfg *pretrain.LlamaConfig) error {
	if f.isSet("preset") {
		p, err := pretrain.LlamaPreset(m.preset)
		if err != nil {
			return fmt.Errorf("%w: --preset: %v", errUsage, err)
		}
		cfg.Preset, cfg.Model = m.preset, p
	}
	c := &cfg.Model
	for _, s := range []struct {
		name string
		v    int
		to   *int
	}{{"hidden-size", m.hidden, &c.HiddenSize}, {"intermediate-size", m.inter, &c.IntermediateSize}, {"layers", m.layers, &c.NumHiddenLayers},
		{"heads", m.heads, &c.NumAttentionHeads}, {"kv-heads", m.kvHeads, &c.NumKeyValueHeads}, {"head-dim", m.headDim, &c.HeadDim}} {
		if f.isSet(s.name) {
			*s.to = s.v
		}
	}
	return nil
}

// runPretrainLlama is `zoo pretrain llama [flags]`.
func runPretrainLlama(args []string, stdout io.Writer) error {
	cfg, err := readConfig(args, pretrain.DefaultLlama(), pretrain.ReadLlamaConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo pretrain llama", "usage: zoo pretrain llama [flags]\n\nPretrains a LLaMA-style decoder (RMSNorm, rotary, SwiGLU, grouped-query attention) as a causal LM; checkpoints are Hugging Face LlamaForCausalLM folders. With no flags: the GPT main job's corpus (Newton's Opticks), split, steps, batch, block and schedule, with a byte-fallback BPE of 1024 tokens trained on the corpus and a model of the GPT's parameter count.")
	mf := llamaFlags(f, &cfg, "a LLaMA-family checkpoint (model, config and tokenizer): LM fine-tuning")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if err := mf.apply(f, &cfg); err != nil {
		return err
	}
	cfg.WarmupSteps = f.warmup(cfg.WarmupSteps, cfg.MaxSteps)
	ctx, stop := signalContext()
	defer stop()
	res, err := pretrain.RunLlama(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.OutputDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps, training loss %.4f, validation loss %.4f (best %.4f), %.4f bits per character\n", res.Steps, res.Loss, res.ValLoss, res.BestLoss, res.BitsPerChar)
	pretrainEnd(stdout, &res.Result, cfg.OutputDir)
	return nil
}

// runFinetuneLlama is `zoo finetune llama --task lm|classify --init-from DIR …`.
func runFinetuneLlama(args []string, stdout io.Writer) error {
	switch task := preScan(args, "task"); task {
	case "", "lm":
		return runFinetuneLlamaLM(args, stdout)
	case "classify":
		return runClassify("llama", args, stdout)
	default:
		return fmt.Errorf("%w: --task %q: use lm or classify", errUsage, task)
	}
}

// runFinetuneLlamaLM continues causal-LM training of a LLaMA-family
// checkpoint on new text.
func runFinetuneLlamaLM(args []string, stdout io.Writer) error {
	base := pretrain.DefaultLlama()
	base.OutputDir = filepath.Join("runs", "llama-finetune")
	cfg, err := readConfig(args, base, pretrain.ReadLlamaConfig)
	if err != nil {
		return err
	}
	f := newFlags("zoo finetune llama", "usage: zoo finetune llama --task lm --init-from DIR --corpus TEXT [flags]\n\nContinues causal-LM training of a LLaMA-family checkpoint (llama, qwen2, mistral) on new text, with its tokenizer; the model flags are the checkpoint's.")
	f.String("task", "lm", "lm (continue causal-LM training on new text) or classify (sequence classification)")
	mf := llamaFlags(f, &cfg, "the LLaMA-family checkpoint to fine-tune (model, config and tokenizer)")
	f.alias("checkpoint", "init-from")
	if help, err := f.parse(args, stdout); help || err != nil {
		return err
	}
	if err := mf.apply(f, &cfg); err != nil {
		return err
	}
	if cfg.InitFrom == "" {
		return fmt.Errorf("%w: --init-from is required: the LLaMA-family checkpoint to fine-tune", errUsage)
	}
	if err := expectFamily(cfg.InitFrom, "llama"); err != nil {
		return err
	}
	cfg.WarmupSteps = f.warmup(cfg.WarmupSteps, cfg.MaxSteps)
	ctx, stop := signalContext()
	defer stop()
	res, err := pretrain.RunLlama(ctx, cfg, stdout)
	if err != nil {
		return interrupted(err, cfg.OutputDir, stdout)
	}
	fmt.Fprintf(stdout, "\ndone: %d steps, validation loss %.4f, %.4f bits per character\n%s\n", res.Steps, res.ValLoss, res.BitsPerChar, checkpointLine(res.Final, res.Best, res.BestStep))
	return nil
}

// runEvalLlama is `zoo eval --checkpoint DIR (--corpus TEXT | --labelled
// FILE)` for a LLaMA-family checkpoint.
func runEvalLlama(args []string, stdout io.Writer) error {
	return runEvalLM(args, stdout, "a LLaMA-family checkpoint", true, pretrain.EvalLlama)
}
